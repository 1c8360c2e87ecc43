-- inflight_lock_jobs: inflight_run_jobs under FOR UPDATE, held for the rest of a carry's
-- transaction. graphile-worker takes jobs with FOR UPDATE SKIP LOCKED, so while the carry
-- holds them no worker starts the run on a half-rewritten log; a job already running (locked
-- within lock_reset) makes the carry refuse the run. Waits at most lock_timeout.
-- params: task (the flows task), run_id, lock_reset (interval)
SELECT j.id, t.identifier, j.run_at, j.locked_by,
       coalesce(j.locked_at > now() - %(lock_reset)s::interval, false) AS running
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.attempts < j.max_attempts
  AND j.payload ->> 'data' IS NOT NULL
  AND coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
      = %(run_id)s
ORDER BY j.run_at, j.id
FOR UPDATE OF j;
