-- live_jobs_for_run: every job that can still run for this run (attempts left), oldest first,
-- with what kind of wake-up it is: a wait continuation, a step dispatch, or a key-less
-- wake-up (recovery / start).
-- params: run_id, task
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
SELECT j.id, j.key, j.run_at, j.locked_at, j.locked_by, j.created_at,
       b ? 'stepId' AS is_step,
       (b ? 'waitContinuation' OR j.key ~ '^wait_[0-9A-HJKMNP-TV-Z]{26}(:|$)') AS is_wait,
       coalesce(b -> 'waitContinuation' ->> 'correlationId', split_part(j.key, ':', 1)) AS wait
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
CROSS JOIN LATERAL (
    SELECT convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb AS b
) x
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.attempts < j.max_attempts
  AND j.payload ->> 'data' IS NOT NULL
  AND coalesce(b ->> 'runId', b ->> 'workflowRunId') = %(run_id)s
ORDER BY j.run_at, j.id;
