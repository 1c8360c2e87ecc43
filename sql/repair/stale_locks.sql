-- stale_locks: the queue locks `wfctl repair --unlock-older-than AGE` / `--unlock-dead-worker ID`
-- would release (WF135): jobs of the world's task locked longer than AGE, or locked by a
-- worker the operator names as dead. Shown by the dry run before anything is released.
-- Only the world's own task: a shared graphile schema may hold other applications' jobs.
-- With --run, only the locks of those runs.
-- params: task, older_than (interval or NULL), workers (text[] or NULL), run_ids (text[] or NULL)
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
SELECT j.id, j.key, j.locked_by, j.locked_at, now() - j.locked_at AS held, x.run_id
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
CROSS JOIN LATERAL (
    SELECT coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId') AS run_id
) x
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.locked_at IS NOT NULL
  AND j.payload ->> 'data' IS NOT NULL
  AND ((%(older_than)s::interval IS NOT NULL AND j.locked_at < now() - %(older_than)s::interval)
       OR j.locked_by = ANY (coalesce(%(workers)s::text[], '{}')))
  AND (%(run_ids)s::text[] IS NULL OR x.run_id = ANY (%(run_ids)s::text[]))
ORDER BY j.locked_at, j.id;
