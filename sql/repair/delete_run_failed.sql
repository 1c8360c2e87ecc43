-- delete_run_failed: remove the run_failed event the runtime wrote when it could not replay a
-- log (revival, --allow-revive). Guarded by type.
-- params: run_id, event_id
DELETE FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND id = %(event_id)s AND type = 'run_failed'
RETURNING id;
