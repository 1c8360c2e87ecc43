-- set_run_error_code: a failed run's error code, after finish_run in the same transaction.
-- Only sent when the run has a code: the column exists from beta.29 on (4.x worlds lack it).
-- params: run_id, error_code
UPDATE workflow.workflow_runs
SET error_code = %(error_code)s
WHERE id = %(run_id)s;
