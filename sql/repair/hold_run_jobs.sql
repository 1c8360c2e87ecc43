-- hold_run_jobs: lock every queue job of the run FOR UPDATE for the rest of a slot-log rewrite.
-- graphile-worker takes jobs with FOR UPDATE SKIP LOCKED, so while the rewrite holds them no
-- worker can start the run and write an event into a log being renumbered. A job with a
-- recent locked_at is already running (graphile's 4-hour reset window): the rewrite refuses.
-- Waits at most lock_timeout (a worker inside its own get_job holds the row briefly).
-- Cost: decodes every job payload of the task (the queue has no index on the run id), once
-- per rewritten run; rewrites are rare and opt-in, so this stays a per-run scan.
-- params: task, run_id
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
SELECT j.id, j.locked_at, j.locked_by,
       j.locked_at > now() - interval '4 hours' AS running
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
  AND j.payload ->> 'data' IS NOT NULL
  AND coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
      = %(run_id)s
FOR UPDATE OF j;
