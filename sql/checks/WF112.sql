-- WF112 wait row completed with no wait_completed event (seed entity-event-not-atomic; §8 F4).
-- Replay sees the wait still pending, its wait_completed is refused "already completed", the
-- suspension computes a 1 s timeout and enqueues a continuation: one flow call per second,
-- forever, with no error anywhere. Only visible while the run is non-terminal (run end deletes
-- wait rows).
-- Age: completed_at is written by the JS clock in UTC.
-- Age, either column type: to_timestamp(extract(epoch FROM x)) is x's instant, reading a
-- `timestamp` as UTC wall time (as drizzle writes JS dates) and a `timestamptz` (upstream
-- 0026) as itself, so the gate is right on servers outside UTC for both.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      -- not corruption: retention emptied the run (expired_at), or its spec is >= 9 (the log
      -- is authoritative there: the package no longer gates writes on these rows)
      AND r.expired_at IS NULL
      AND NOT coalesce(substring(r.spec_version FROM '^[0-9]{1,9}$')::int >= 9, false)
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
)
SELECT w.run_id,
       substring(w.wait_id FROM length(w.run_id) + 2) AS entity_id,
       to_timestamp(extract(epoch FROM coalesce(w.completed_at, w.updated_at))) AS observed_at,
       to_timestamp(extract(epoch FROM coalesce(w.completed_at, w.updated_at)))
           >= now() - %(min_age)s::interval AS in_flight,
       format('wait %%s completed at %%s, no wait_completed event', w.wait_id,
              to_char(w.completed_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'))
           AS detail
FROM runs r
JOIN workflow.workflow_waits w ON w.run_id = r.id
WHERE w.status = 'completed'
  AND NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = w.run_id
      AND e.correlation_id = substring(w.wait_id FROM length(w.run_id) + 2)
      AND e.type = 'wait_completed'
)
ORDER BY observed_at;
