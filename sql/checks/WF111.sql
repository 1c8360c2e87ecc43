-- WF111 step row terminal (completed / failed), or pending with a retry error, with no matching
-- step_completed / step_failed / step_retrying event (seed entity-event-not-atomic; §8 F5).
-- beta.29 updates the row, then inserts the event in a second autocommit. Replay re-dispatches
-- the step and every write is refused "terminal state": the run never moves again.
-- The retry variant: a pending row with error_cbor and retry_after whose newest step event
-- (in id order, the log's order) is not a step_retrying.
-- Age: completed_at / updated_at are written by the JS clock in UTC.
-- Age, either column type: to_timestamp(extract(epoch FROM x)) is x's instant, reading a
-- `timestamp` as UTC wall time (as drizzle writes JS dates) and a `timestamptz` (upstream
-- 0026) as itself, so the gate is right on servers outside UTC for both.
-- params: live_only, run_ids, since, min_age.
-- Performance: two branches (UNION ALL) rather than one CASE, so the terminal branch's
-- NOT EXISTS is an anti-join (a NOT EXISTS inside a CASE is a subplan per step row: 5M
-- index probes on a 1M-run history); `e.type IN (...)` restates what missing_type can be
-- there so the --all plan scans only those events. Same rows as the single-CASE form.
WITH runs AS NOT MATERIALIZED (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      -- not corruption: retention emptied the run (expired_at), or its spec is >= 9 (the log
      -- is authoritative there: the package no longer gates writes on these rows)
      AND r.expired_at IS NULL
      AND NOT coalesce(substring(r.spec_version FROM '^[0-9]{1,9}$')::int >= 9, false)
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
candidates AS NOT MATERIALIZED (
    SELECT s.*,
           CASE s.status WHEN 'completed' THEN 'step_completed'
                         WHEN 'failed' THEN 'step_failed'
                         ELSE 'step_retrying' END AS missing_type,
           coalesce(s.completed_at, s.updated_at) AS observed_at
    FROM runs r
    JOIN workflow.workflow_steps s ON s.run_id = r.id
    WHERE s.status IN ('completed', 'failed')
       OR (s.status = 'pending' AND s.retry_after IS NOT NULL AND s.error_cbor IS NOT NULL)
)
SELECT c.run_id,
       c.step_id AS entity_id,
       to_timestamp(extract(epoch FROM c.observed_at)) AS observed_at,
       to_timestamp(extract(epoch FROM c.observed_at)) >= now() - %(min_age)s::interval AS in_flight,
       format('step %%s is %%s (attempt %%s) but has no %%s event',
              c.step_name, c.status, c.attempt, c.missing_type) AS detail
FROM candidates c
WHERE c.status IN ('completed', 'failed')
  AND NOT EXISTS (
      SELECT 1 FROM workflow.workflow_events e
      WHERE e.run_id = c.run_id AND e.correlation_id = c.step_id
        AND e.type IN ('step_completed', 'step_failed') AND e.type = c.missing_type)
UNION ALL
SELECT c.run_id,
       c.step_id AS entity_id,
       to_timestamp(extract(epoch FROM c.observed_at)) AS observed_at,
       to_timestamp(extract(epoch FROM c.observed_at)) >= now() - %(min_age)s::interval AS in_flight,
       format('step %%s is %%s (attempt %%s) but has no %%s event',
              c.step_name, c.status, c.attempt, c.missing_type) AS detail
FROM candidates c
WHERE c.status = 'pending'
  AND coalesce((
      SELECT e.type <> 'step_retrying' FROM workflow.workflow_events e
      WHERE e.run_id = c.run_id AND e.correlation_id = c.step_id
        AND e.type IN ('step_started', 'step_retrying')
      ORDER BY e.id DESC LIMIT 1), true)
ORDER BY observed_at;
