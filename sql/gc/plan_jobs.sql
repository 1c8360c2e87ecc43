-- plan_jobs: the queue jobs a gc with this cutoff would delete (dry run; where
-- graphile_worker is installed). Same job predicate as delete_jobs.sql.
-- params: cutoff (timestamp), task
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
SELECT count(*)
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
JOIN workflow.workflow_runs r
  ON r.id = coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.payload ->> 'data' IS NOT NULL
  AND (j.locked_at IS NULL OR j.locked_at <= now() - interval '4 hours')
  AND r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp;
