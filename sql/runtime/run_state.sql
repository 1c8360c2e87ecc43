-- run_state: what a client shows of one run (status, output, error), e.g. after the run's
-- terminal notification (channel wfctl_run_end), or for `Client.get()`.
-- params: run_id
SELECT r.id, r.status::text AS status, r.name, r.output_cbor, r.error_cbor, r.error_code,
       r.created_at, r.completed_at
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
