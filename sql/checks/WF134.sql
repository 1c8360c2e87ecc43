-- WF134 exhausted queue jobs (attempts = max_attempts) for a run that is still live (§5.1).
-- graphile keeps a permanently failed job with its last_error; the run it was meant to wake
-- stays pending/running. Often the cause of a WF133 stranded run.
-- Jobs wfctl failed on purpose (last_error 'wfctl: ...', WF131/WF132 repairs) are not findings.
-- Nor is an exhausted job the run has moved past: once the run was re-woken (WF133's repair, a
-- world.start() re-enqueue, a continuation) it has a live job enqueued after the exhausted
-- one, or its log has an event written after the job's last failure: the job is history.
-- When it failed: graphile 0.16.6's failJob leaves updated_at alone and sets run_at =
-- greatest(now(), run_at) + exp(least(attempts, 10)) s, so the last failure is run_at minus
-- that back-off; permanently_fail_jobs sets updated_at instead: the later of the two.
-- (events.created_at is the DB's session wall clock: compared as ::timestamp.)
-- Age: the job's last failure (failed_at, below) -> now().
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
-- Tasks: the flows task and its sibling steps task (4.x runs each step as its own job there,
-- its body naming the run as workflowRunId; other releases have no such jobs).
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE r.status IN ('pending', 'running')
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
jobs AS (
    SELECT j.id, j.key, j.attempts, j.updated_at, j.last_error, j.created_at,
           greatest(j.updated_at,
                    j.run_at - exp(least(j.attempts, 10)) * interval '1 second') AS failed_at,
           coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
                    convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
               AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
      AND j.attempts >= j.max_attempts
      AND coalesce(j.last_error, '') NOT LIKE 'wfctl:%%'
      AND j.payload ->> 'data' IS NOT NULL
)
SELECT j.run_id,
       j.id::text AS entity_id,
       j.failed_at AS observed_at,
       j.failed_at >= now() - %(min_age)s::interval AS in_flight,
       format('job %%s (key %%s) used all %%s attempts: %%s', j.id, j.key, j.attempts,
              left(coalesce(j.last_error, 'no error recorded'), 120)) AS detail
FROM jobs j
JOIN runs r ON r.id = j.run_id
WHERE NOT EXISTS (
          SELECT 1
          FROM graphile_worker._private_jobs n
          JOIN graphile_worker._private_tasks t ON t.id = n.task_id
          WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
            AND n.attempts < n.max_attempts
            AND n.created_at > j.created_at
            AND n.payload ->> 'data' IS NOT NULL
            AND coalesce(convert_from(decode(n.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
                         convert_from(decode(n.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
                = j.run_id)
  AND NOT EXISTS (
          SELECT 1
          FROM workflow.workflow_events e
          WHERE e.run_id = j.run_id
            AND e.created_at > j.failed_at::timestamp)
ORDER BY j.failed_at;
