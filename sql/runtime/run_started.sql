-- run_started: pending -> running (reference §4), guarded: raises unless the run is pending.
-- params: run_id
WITH u AS (
    UPDATE workflow.workflow_runs
    SET status = 'running', started_at = now() AT TIME ZONE 'UTC',
        updated_at = now() AT TIME ZONE 'UTC'
    WHERE id = %(run_id)s AND status = 'pending'
    RETURNING id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: run ' || %(run_id)s::text || ' is not pending (' || count(*) || ')')::int END
FROM u;
