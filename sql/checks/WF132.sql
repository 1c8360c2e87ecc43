-- WF132 recovery job pile-up (#3119, #3758; §8 F10): several pending key-less wake-up jobs
-- (job key = the message id, `msg_...`, no stepId in the body) for one run. Each process start
-- re-enqueues every active run without a key; harmless within one process, but across
-- processes every copy replays the run, and a booting peer re-drives a live one.
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
jobs AS (
    SELECT j.id, j.created_at,
           convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb AS body
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier LIKE %(task)s
      AND j.attempts < j.max_attempts
      AND j.locked_at IS NULL
      AND (j.key IS NULL OR j.key LIKE 'msg\_%%')
      AND j.payload ->> 'data' IS NOT NULL
)
SELECT j.body ->> 'runId' AS run_id,
       j.body ->> 'runId' AS entity_id,
       max(j.created_at) AS observed_at,
       max(j.created_at) >= now() - %(min_age)s::interval AS in_flight,
       format('%%s pending key-less wake-up jobs (jobs %%s)', count(*),
              array_to_string((array_agg(j.id ORDER BY j.id))[1:5], ',')) AS detail
FROM jobs j
JOIN runs r ON r.id = j.body ->> 'runId'
WHERE NOT j.body ? 'stepId'
GROUP BY j.body ->> 'runId'
HAVING count(*) > 1
ORDER BY observed_at;
