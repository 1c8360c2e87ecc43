-- lock_wait: the wait row (key <run_id>-<correlation_id>), locked FOR UPDATE against the
-- world's wait_completed UPDATE.
-- params: run_id, correlation_id
SELECT wait_id, status, resume_at, completed_at, spec_version
FROM workflow.workflow_waits
WHERE wait_id = %(run_id)s || '-' || %(correlation_id)s
FOR UPDATE;
