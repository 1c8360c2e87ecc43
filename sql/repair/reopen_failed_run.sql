-- reopen_failed_run: set a run failed by a replay failure back to running (revival,
-- --allow-revive): status, completed_at and the error columns as a running run has them
-- (zod requires completed_at NULL while running). Guarded: only that failure, only failed.
-- updated_at is JS-written in the package (UTC wall clock).
-- params: run_id, error_code
UPDATE workflow.workflow_runs
SET status = 'running', completed_at = NULL, error = NULL, error_cbor = NULL, error_code = NULL,
    updated_at = now() AT TIME ZONE 'UTC'
WHERE id = %(run_id)s AND status = 'failed' AND error_code = %(error_code)s
RETURNING id;
