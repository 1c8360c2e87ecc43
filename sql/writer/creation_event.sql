-- creation_event: the existing creation event (step_created, hook_created, wait_created,
-- attr_set) for an entity, if any: the one the creation unique index lets exist once.
-- params: run_id, correlation_id, type
SELECT id FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND correlation_id = %(correlation_id)s AND type = %(type)s
LIMIT 1;
