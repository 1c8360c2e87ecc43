-- inflight_run_jobs: the run's live queue jobs in the world's flows task and its sibling steps
-- task (4.x runs every step as its own `<prefix>steps` job, its body naming the run as
-- workflowRunId; the 5.0 runtimes serve the flows task only), and whether a worker holds one
-- now (locked within graphile's reset window, `lock_reset`: wfctl/world/queue_locks.py).
-- Read-only (the plan); inflight_lock_jobs is the same under FOR UPDATE (the carry).
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
ORDER BY j.run_at, j.id;
