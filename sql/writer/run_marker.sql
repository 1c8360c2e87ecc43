-- run_marker: run_marker_for_share without the lock, for read-only planning (dry runs).
-- params: run_id
SELECT run_id FROM workflow.workflow_event_slots WHERE run_id = %(run_id)s;
