-- inflight_run_log: a run's correlated events in log order, with the hook_created payloads
-- (their token is compared by the 5.0 cores' replay with the token the replay mints).
-- params: run_id
SELECT e.correlation_id, e.type,
       CASE WHEN e.type = 'hook_created' THEN e.payload_cbor END AS payload_cbor,
       CASE WHEN e.type = 'hook_created' THEN e.payload END AS payload
FROM workflow.workflow_events e
WHERE e.run_id = %(run_id)s AND e.correlation_id IS NOT NULL
ORDER BY e.id;
