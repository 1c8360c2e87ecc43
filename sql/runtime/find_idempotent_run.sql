-- find_idempotent_run: the run already started with this idempotency key (kept in the run's
-- attributes under `wfctl.idempotencyKey`; the world has no column for it).
-- params: key
SELECT id, status::text AS status, name, input_cbor FROM workflow.workflow_runs
WHERE attributes ->> 'wfctl.idempotencyKey' = %(key)s
ORDER BY created_at
LIMIT 1;
