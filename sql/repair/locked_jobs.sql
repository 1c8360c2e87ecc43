-- locked_jobs: every queue job a worker holds right now (locked within graphile's 4-hour
-- reset window), with the run it names. A locked job is the only visible sign of a live
-- writer that may still be about to insert the very event a repair would append.
-- Read as one snapshot, refreshed at most every second, instead of once per repaired run:
-- the queue has no index on locked_at, and a scan per run made 10,000 repairs quadratic.
-- params: task
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
SELECT coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId') AS run_id,
       j.id, j.locked_by, j.locked_at
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.locked_at > now() - interval '4 hours'
  AND j.payload ->> 'data' IS NOT NULL;
