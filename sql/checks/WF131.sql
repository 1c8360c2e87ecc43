-- WF131 runaway wait-continuation chains (seed entity-event-not-atomic, last comment; §8 F9).
-- A wait whose completion never reaches the log (WF112/WF102) makes every delivery compute a
-- 1 s timeout and reschedule itself; lost responses fork parallel chains. Reported per
-- (run, wait): more than one live wake-up job, or a continuation attempt past the threshold.
-- Bodies from core >= beta.47 carry waitContinuation{correlationId, attempt}; beta.39 bodies do
-- not, so there the wait comes from the job key (wait_<ULID>[:...]) and the attempt from the
-- message's top-level `attempt` (it grows by one per reschedule).
-- Live job: attempts < max_attempts (a permanently failed job wakes nothing).
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, attempt_threshold, task.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
jobs AS (
    SELECT j.id, j.key, j.created_at, j.locked_at,
           (j.payload ->> 'attempt')::int AS message_attempt,
           convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb AS body
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier LIKE %(task)s
      AND j.attempts < j.max_attempts
      AND j.payload ->> 'data' IS NOT NULL
),
continuations AS (
    SELECT j.body ->> 'runId' AS run_id,
           coalesce(j.body -> 'waitContinuation' ->> 'correlationId',
                    split_part(j.key, ':', 1)) AS wait,
           coalesce((j.body -> 'waitContinuation' ->> 'attempt')::int, j.message_attempt) AS attempt,
           j.created_at, j.id
    FROM jobs j
    WHERE j.body ? 'waitContinuation' OR j.key ~ '^wait_[0-9A-HJKMNP-TV-Z]{26}(:|$)'
)
SELECT c.run_id,
       c.wait AS entity_id,
       min(c.created_at)::timestamp AS observed_at,
       min(c.created_at) >= now() - %(min_age)s::interval AS in_flight,
       format('%%s live wake-up job(s) for wait %%s, highest continuation attempt %%s (jobs %%s)',
              count(*), c.wait, max(c.attempt),
              array_to_string((array_agg(c.id ORDER BY c.id))[1:5], ',')) AS detail
FROM continuations c
JOIN runs r ON r.id = c.run_id
GROUP BY c.run_id, c.wait
HAVING count(*) > 1 OR max(c.attempt) > %(attempt_threshold)s
ORDER BY observed_at;
