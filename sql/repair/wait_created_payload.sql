-- wait_created_payload: the wait_created event of a wait, whose resumeAt a repaired
-- wait_completed must copy exactly (the sleep consumer diverges on a 1 ms difference).
-- params: run_id, correlation_id
SELECT payload_cbor FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND correlation_id = %(correlation_id)s AND type = 'wait_created'
ORDER BY id
LIMIT 1;
