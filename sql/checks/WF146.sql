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
    WHERE NOT %(live_only)s  -- the default live scope has no run that ended: skip the scan
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
-- Performance: one grouped pass over the scope's events finds the runs whose newest
-- step_started sorts after their first terminal event; only those runs are read again.
ends AS (
    SELECT e.run_id,
           min(e.id) FILTER (WHERE e.type IN ('run_completed', 'run_failed', 'run_cancelled'))
               AS terminal_id,
           max(e.id) FILTER (WHERE e.type = 'step_started') AS last_started
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type IN ('run_completed', 'run_failed', 'run_cancelled', 'step_started')
    GROUP BY 1
),
late AS (
    SELECT t.run_id, t.terminal_id, e.id, e.correlation_id, e.created_at,
           (SELECT x.type FROM workflow.workflow_events x
            WHERE x.run_id = t.run_id AND x.id = t.terminal_id) AS terminal_type
    FROM ends t
    JOIN workflow.workflow_events e
      ON e.run_id = t.run_id AND e.id > t.terminal_id AND e.type = 'step_started'
    WHERE t.last_started > t.terminal_id
)
SELECT l.run_id,
       l.correlation_id AS entity_id,
       max(l.created_at)::timestamptz AS observed_at,
       max(l.created_at) >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('%%s step_started after %%s %%s (first: %%s)', count(*), l.terminal_type,
              l.terminal_id, min(l.id)) AS detail
FROM late l
GROUP BY l.run_id, l.correlation_id, l.terminal_type, l.terminal_id
ORDER BY observed_at;
