-- WF101 step row with no step_created event (the lazy-start wedge; seed entity-event-not-atomic).
-- beta.29 writes the step row and its step_created event in two autocommits; a crash between
-- them leaves the row alone, and every replay's lazy step_started is refused "already created".
-- Age: workflow_steps.created_at is a DB default (session-time wall clock) -> localtimestamp.
-- params: live_only, run_ids, since, min_age. Columns: the common finding shape.
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
SELECT s.run_id,
       s.step_id AS entity_id,
       s.created_at::timestamptz AS observed_at,
       s.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('step %%s status %%s attempt %%s%%s', s.step_name, s.status, s.attempt,
              CASE WHEN other.found THEN ' (other events for the step exist: report only)'
                   ELSE '' END) AS detail
FROM runs r
JOIN workflow.workflow_steps s ON s.run_id = r.id
-- A LATERAL with LIMIT, not an EXISTS in the select list: the planner turns such an EXISTS
-- into a hashed subplan over every event when it expects many findings (--all), where a
-- probe per finding (a handful) is what is wanted.
LEFT JOIN LATERAL (
    SELECT true AS found FROM workflow.workflow_events o
    WHERE o.run_id = s.run_id AND o.correlation_id = s.step_id
    LIMIT 1
) other ON true
WHERE NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = s.run_id AND e.correlation_id = s.step_id AND e.type = 'step_created'
)
ORDER BY s.created_at;
