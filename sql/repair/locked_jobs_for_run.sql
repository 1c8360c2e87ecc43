-- locked_jobs_for_run: queue jobs for the run that a worker holds right now (locked within
-- graphile's 4-hour reset window). A locked job is the only visible sign of a live writer
-- that may still be about to insert the very event a repair would append.
-- params: run_id, task
SELECT j.id, j.locked_by, j.locked_at
FROM graphile_worker._private_jobs j
JOIN graphile_worker._private_tasks t ON t.id = j.task_id
WHERE t.identifier = %(task)s
  AND j.locked_at > now() - interval '4 hours'
  AND j.payload ->> 'data' IS NOT NULL
  AND convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId'
      = %(run_id)s;
