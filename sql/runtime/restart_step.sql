-- restart_step: step_started for an existing step (a retry, or a step found unfinished when a
-- process picks the run up): running, attempt + 1, retry_after cleared. Guarded (§3.4): raises
-- when the step is missing or terminal.
-- params: step_id
WITH u AS (
    UPDATE workflow.workflow_steps
    SET status = 'running', attempt = attempt + 1,
        started_at = coalesce(started_at, now() AT TIME ZONE 'UTC'),
        retry_after = NULL, updated_at = now() AT TIME ZONE 'UTC'
    WHERE step_id = %(step_id)s AND status NOT IN ('completed', 'failed', 'cancelled')
    RETURNING step_id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: step ' || %(step_id)s::text || ' is missing or terminal (' || count(*) || ')')::int END
FROM u;
