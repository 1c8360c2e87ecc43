-- lock_run: the first lock of every repair transaction. FOR UPDATE on the run row serialises
-- the repair against run transitions and hook_received (which locks the same row), and
-- against a second `wfctl repair` on the same run. Waits at most lock_timeout.
-- params: run_id
SELECT id, status, name, deployment_id, spec_version, input_cbor, execution_context_cbor,
       output_cbor, error_cbor, error_code, attributes, encryption_public_key, created_at
FROM workflow.workflow_runs
WHERE id = %(run_id)s
FOR UPDATE;
