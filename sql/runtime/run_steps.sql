-- run_steps: a run's steps for `wfctl runs show`.
-- params: run_id
SELECT step_id, step_name, status::text AS status, attempt, output_cbor, error_cbor,
       retry_after, created_at, completed_at
FROM workflow.workflow_steps WHERE run_id = %(run_id)s ORDER BY created_at, step_id;
