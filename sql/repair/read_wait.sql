-- read_wait: lock_wait without the lock, for dry runs.
-- params: run_id, correlation_id
SELECT wait_id, status, resume_at, completed_at, spec_version
FROM workflow.workflow_waits
WHERE wait_id = %(run_id)s || '-' || %(correlation_id)s;
