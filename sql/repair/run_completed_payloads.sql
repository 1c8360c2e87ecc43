-- run_completed_payloads: a run's run_completed payloads in log order, for WF154's repair
-- (the first one is the run's result, as upstream reads it).
-- params: run_id
SELECT payload_cbor
FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND type = 'run_completed'
ORDER BY created_at, id;
