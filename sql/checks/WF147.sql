-- WF147 events after the run's terminal event (upstream rule run.terminal-is-last).
-- A run's first run_completed / run_failed / run_cancelled should be its last event. beta.29
-- leaves later events through its non-atomic paths: a step completion written for a step that
-- was never started (step_completed/_failed/_retrying skip the run check), a hook_created whose
-- row insert raced the run's end (the event lands after the terminal event, the row outlives
-- the run: WF104), a second terminal event of another kind.
-- Not reported (documented as benign): a step started before the run's end closing out
-- (its step_completed / step_failed / step_retrying), a repeated run_cancelled after
-- run_cancelled (the world records each cancel), `noop` fillers; step_started after the end
-- is WF146's.
-- Terminal runs are outside the default live scope: this check speaks with --all, --run or
-- --since. Read-only.
-- Age: the newest late event's created_at (DB default) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE NOT %(live_only)s  -- the default live scope has no run that ended: skip the scan
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
-- Performance: one grouped pass over the scope's events finds the runs with any event after
-- their first terminal event (newest id > first terminal id); only those runs are read again.
ends AS (
    SELECT e.run_id,
           min(e.id) FILTER (WHERE e.type IN ('run_completed', 'run_failed', 'run_cancelled'))
               AS terminal_id,
           max(e.id) AS last_id
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    GROUP BY 1
),
suspects AS (
    SELECT t.run_id, t.terminal_id,
           (SELECT x.type FROM workflow.workflow_events x
            WHERE x.run_id = t.run_id AND x.id = t.terminal_id) AS terminal_type
    FROM ends t
    WHERE t.last_id > t.terminal_id
),
late AS (
    SELECT t.run_id, t.terminal_id, t.terminal_type, e.id, e.type, e.correlation_id,
           e.created_at
    FROM suspects t
    -- Per suspect through the run's key; OFFSET 0 keeps the planner from flattening this
    -- into a hash join over every event of the world, which it picks when it overrates the
    -- suspects (3,675 estimated, 3 found: a 6.8 s scan for a 552-run incremental pass).
    CROSS JOIN LATERAL (
        SELECT x.run_id, x.id, x.type, x.correlation_id, x.created_at
        FROM workflow.workflow_events x
        WHERE x.run_id = t.run_id AND x.id > t.terminal_id
        OFFSET 0
    ) e
    WHERE e.type NOT IN ('step_started', 'noop')
      AND NOT (e.type = 'run_cancelled' AND t.terminal_type = 'run_cancelled')
      AND NOT (e.type IN ('step_completed', 'step_failed', 'step_retrying')
               AND EXISTS (SELECT 1 FROM workflow.workflow_events s
                           WHERE s.run_id = e.run_id AND s.correlation_id = e.correlation_id
                             AND s.type = 'step_started' AND s.id < t.terminal_id))
)
SELECT l.run_id,
       l.run_id AS entity_id,
       max(l.created_at)::timestamptz AS observed_at,
       max(l.created_at) >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('%%s event(s) after %%s %%s: %%s', count(*), l.terminal_type, l.terminal_id,
              string_agg(l.type || '(' || coalesce(l.correlation_id, '-') || ')', ', '
                         ORDER BY l.id)) AS detail
FROM late l
GROUP BY l.run_id, l.terminal_type, l.terminal_id
ORDER BY observed_at;
