-- WF134 exhausted queue jobs (attempts = max_attempts) for a run that is still live (§5.1).
-- graphile keeps a permanently failed job with its last_error; the run it was meant to wake
-- stays pending/running. Often the cause of a WF133 stranded run.
-- Jobs wfctl failed on purpose (last_error 'wfctl: ...', WF131/WF132 repairs) are not findings.
-- Age: the job's updated_at (timestamptz) -> now().
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE r.status IN ('pending', 'running')
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
jobs AS (
    SELECT j.id, j.key, j.attempts, j.updated_at, j.last_error,
           convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId' AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier LIKE %(task)s
      AND j.attempts >= j.max_attempts
      AND coalesce(j.last_error, '') NOT LIKE 'wfctl:%%'
      AND j.payload ->> 'data' IS NOT NULL
)
SELECT j.run_id,
       j.id::text AS entity_id,
       j.updated_at::timestamp AS observed_at,
       j.updated_at >= now() - %(min_age)s::interval AS in_flight,
       format('job %%s (key %%s) used all %%s attempts: %%s', j.id, j.key, j.attempts,
              left(coalesce(j.last_error, 'no error recorded'), 120)) AS detail
FROM jobs j
JOIN runs r ON r.id = j.run_id
ORDER BY j.updated_at;
