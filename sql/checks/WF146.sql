-- WF146 step_started after the run's terminal event (upstream rules
-- step.no-restart-after-terminal, run.terminal-is-last; vw#3457).
-- beta.29 validates a plain step_started against the STEP (a running step may start again)
-- but not against the run's end: a redelivered step message after run_completed /
-- run_cancelled starts the step again and re-executes its body, side effects included, for a
-- run that is over (fixed upstream in beta.42). The log shows a step_started after the run's
-- first terminal event.
-- Terminal runs are outside the default live scope: this check speaks with --all, --run or
-- --since. Read-only: the step ran; nothing to append.
-- Age: the late step_started's created_at (DB default) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
ends AS (
    SELECT e.run_id, min(e.id) AS terminal_id,
           (array_agg(e.type ORDER BY e.id))[1] AS terminal_type
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type IN ('run_completed', 'run_failed', 'run_cancelled')
    GROUP BY 1
)
SELECT t.run_id,
       e.correlation_id AS entity_id,
       max(e.created_at) AS observed_at,
       max(e.created_at) >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('%%s step_started after %%s %%s (first: %%s)', count(*), t.terminal_type,
              t.terminal_id, min(e.id)) AS detail
FROM ends t
JOIN workflow.workflow_events e
  ON e.run_id = t.run_id AND e.id > t.terminal_id AND e.type = 'step_started'
GROUP BY t.run_id, e.correlation_id, t.terminal_type, t.terminal_id
ORDER BY observed_at;
