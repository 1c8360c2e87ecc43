-- WF131 runaway wait-continuation chains (seed entity-event-not-atomic, last comment; §8 F9).
-- Runaway means the chain makes no progress, not "more than one job": a healthy long sleep
-- legitimately holds several continuation jobs (hop chains keyed wait_<id>:hop-N, one per
-- WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS setting it was observed under), each at
-- attempt 1, and in core >= beta.47 a hop chain's waitContinuation.attempt grows by one per
-- hop (518,387 hops for a 6-day sleep with a 1 s hop is healthy).
-- The one sign of no progress: a continuation for a wait was enqueued AFTER the wait fell due
-- (resume_at, or completed_at for a row already completed). A delivery at or after the
-- deadline completes the wait and enqueues nothing more for it; one that re-enqueues instead
-- found the wait still pending past its deadline: the F4 loop (row completed, wait_completed
-- refused "already completed", a 1 s timeout, a new wait_<id>:<unixsec> job every second),
-- and each lost response forks one more chain. Attempt counts and chain counts are shown in
-- the detail; they rise only as a consequence of that loop.
-- 5 s of host clock skew are tolerated (core's own near-elapsed threshold is 2 s).
-- In flight while the wait fell due less than --min-age ago.
-- Continuations: bodies from core >= beta.47 carry waitContinuation{correlationId, attempt};
-- beta.39 bodies do not, the wait then comes from the key (wait_<ULID>[:...]) and the attempt
-- from the message's top-level `attempt`. Live job: attempts < max_attempts.
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
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
),
chains AS (
    SELECT c.run_id, c.wait,
           count(*) AS jobs,
           max(c.attempt) AS max_attempt,
           max(c.created_at) AS latest,
           (array_agg(c.id ORDER BY c.id))[1:5] AS ids
    FROM continuations c
    JOIN runs r ON r.id = c.run_id
    GROUP BY c.run_id, c.wait
),
due AS (
    -- JS-written columns: to_timestamp(extract(epoch FROM x)) reads a `timestamp` as UTC
    -- wall time and a `timestamptz` (upstream 0026) as itself: the instant either way.
    SELECT ch.*, w.status AS wait_status,
           to_timestamp(extract(epoch FROM
               CASE WHEN w.status = 'completed' THEN least(w.resume_at, w.completed_at)
                    ELSE w.resume_at END)) AS deadline
    FROM chains ch
    JOIN workflow.workflow_waits w ON w.wait_id = ch.run_id || '-' || ch.wait
)
SELECT d.run_id,
       d.wait AS entity_id,
       d.deadline AS observed_at,
       d.deadline >= now() - %(min_age)s::interval AS in_flight,
       format('wait %%s (%%s, due %%s) is re-enqueued after its deadline, last at %%s: '
              '%%s live continuation job(s), highest attempt %%s (jobs %%s)',
              d.wait, d.wait_status, d.deadline, d.latest, d.jobs, d.max_attempt,
              array_to_string(d.ids, ',')) AS detail
FROM due d
WHERE d.deadline <= now()
  AND d.latest > d.deadline + interval '5 seconds'
ORDER BY observed_at;
