-- WF148 a step row's attempt differs from its step_started events (upstream rule
-- step.attempt-matches-log).
-- Every start raises workflow_steps.attempt by one and journals one step_started in the same
-- transaction (beta.29 plain and lazy start, and wfctl's runtime), so attempt = the number of
-- step_started events of the step. A difference means rows and log were edited apart (a hand
-- fix, a partial restore); the runtime budgets retries by the row's attempt, so a step may
-- retry too often or too rarely. Legacy-spec runs (spec_version NULL or <= 1), runs emptied by
-- retention and spec >= 9 runs are excepted.
-- Read-only: which side is right cannot be known from the database.
-- Age: the step's updated_at (JS clock) as an instant,
-- to_timestamp(extract(epoch FROM x)): right for `timestamp` (UTC wall time) and `timestamptz`.
-- params: live_only, run_ids, since, min_age.
-- Performance: per-run totals first (one grouped pass over the step_started events, one over
-- the steps, a row per run, not per step); only the runs whose totals differ are read per
-- step, by key. (Offsetting differences inside one run, +1 on a step and -1 on another, are missed.)
WITH runs AS NOT MATERIALIZED (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
      AND r.spec_version ~ '^[0-9]+$' AND r.spec_version::int > 1
      -- not corruption: retention emptied the run (expired_at: its step_started events are
      -- gone, the rows stay), or its spec is >= 9 (the log is authoritative there: the
      -- package no longer keeps the row's attempt in step with it)
      AND r.expired_at IS NULL
      AND NOT coalesce(substring(r.spec_version FROM '^[0-9]{1,9}$')::int >= 9, false)
),
run_starts AS (
    SELECT e.run_id, count(*) AS started
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type = 'step_started'
    GROUP BY 1
),
run_attempts AS (
    SELECT s.run_id, sum(s.attempt) AS attempts
    FROM runs r
    JOIN workflow.workflow_steps s ON s.run_id = r.id
    GROUP BY 1
),
suspects AS MATERIALIZED (  -- decided before any step is read (see below)
    SELECT a.run_id
    FROM run_attempts a
    LEFT JOIN run_starts st ON st.run_id = a.run_id
    WHERE a.attempts <> coalesce(st.started, 0)
)
SELECT s.run_id,
       s.step_id AS entity_id,
       to_timestamp(extract(epoch FROM s.updated_at)) AS observed_at,
       to_timestamp(extract(epoch FROM s.updated_at)) >= now() - %(min_age)s::interval AS in_flight,
       format('step %%s: attempt %%s, %%s step_started event(s)', s.step_name, s.attempt,
              s.started) AS detail
FROM suspects u
-- Per suspect run through the steps' run_id index, each step's starts counted through the
-- events' keys; OFFSET 0 keeps the planner from turning this into hash joins over every
-- step and every step_started event, which it picks because it cannot estimate how few
-- runs' totals differ (44.7M estimated, 1 found on a 1M-run world: 10 s of hashing).
CROSS JOIN LATERAL (
    SELECT x.run_id, x.step_id, x.step_name, x.attempt, x.updated_at,
           (SELECT count(*) FROM workflow.workflow_events e
            WHERE e.run_id = x.run_id AND e.correlation_id = x.step_id
              AND e.type = 'step_started') AS started
    FROM workflow.workflow_steps x
    WHERE x.run_id = u.run_id
    OFFSET 0
) s
WHERE s.attempt <> s.started
ORDER BY s.updated_at;
