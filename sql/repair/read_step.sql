-- read_step: lock_step without the lock, for dry runs.
-- params: run_id, step_id
SELECT step_id, step_name, status, attempt, input_cbor, output_cbor, error_cbor,
       retry_after, spec_version, completed_at, updated_at
FROM workflow.workflow_steps
WHERE run_id = %(run_id)s AND step_id = %(step_id)s;
