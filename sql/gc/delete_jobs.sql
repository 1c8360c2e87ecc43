-- delete_jobs: the queue jobs still naming the batch's runs: permanently failed ones, and
-- unlocked leftovers a finished run no longer needs (delivered, they would ask for a run
-- that no longer exists). A job locked within graphile's 4-hour window is never touched:
-- its run was deferred before this statement (locked_jobs).
-- params: run_ids (text[]), task
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
WITH d AS (
    DELETE FROM graphile_worker._private_jobs j
    USING graphile_worker._private_tasks t
    WHERE t.id = j.task_id
      AND t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
      AND j.payload ->> 'data' IS NOT NULL
      AND (j.locked_at IS NULL OR j.locked_at <= now() - interval '4 hours')
      AND coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
          = ANY (%(run_ids)s::text[])
    RETURNING 1
)
SELECT count(*) FROM d;
