-- read_run_events: lock_run_events without the lock, for dry runs (READ ONLY) and for the
-- rewrite's final check that the run holds exactly the ids it planned.
-- params: run_id
SELECT id, type, created_at
FROM workflow.workflow_events
WHERE run_id = %(run_id)s
ORDER BY id;
