-- read_run: lock_run without the lock, for dry runs (a READ ONLY transaction may not lock).
-- params: run_id
SELECT id, status, name, deployment_id, spec_version, input_cbor, execution_context_cbor,
       output_cbor, error_cbor, error_code, attributes, encryption_public_key, created_at
FROM workflow.workflow_runs
WHERE id = %(run_id)s;
