-- inflight_run_jobs: every live queue job of the world's flows task and its sibling steps task
-- (4.x runs every step as its own `<prefix>steps` job, its body naming the run as
-- workflowRunId; the 5.0 runtimes serve the flows task only), with the run it names and
-- whether a worker holds it now (locked within graphile's reset window, `lock_reset`:
-- wfctl/world/queue_locks.py). Read once per plan, not once per run: the queue has no index
-- on the run id, and a scan per run would make the plan quadratic. inflight_lock_jobs is one
-- run's share of it under FOR UPDATE (the carry).
-- params: task (the flows task), lock_reset (interval)
SELECT coalesce(b ->> 'runId', b ->> 'workflowRunId') AS run_id,
       j.id, t.identifier, j.run_at, j.locked_by,
       coalesce(j.locked_at > now() - %(lock_reset)s::interval, false) AS running
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
CROSS JOIN LATERAL (
    SELECT convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb AS b
) x
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.attempts < j.max_attempts
  AND j.payload ->> 'data' IS NOT NULL
ORDER BY j.run_at, j.id;
