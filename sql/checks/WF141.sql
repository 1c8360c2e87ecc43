-- WF141 an event log no replay can consume (§8.0, F12): a second terminal event for one step or
-- wait, a step_started after the step's terminal event, a hook_received after the hook's
-- hook_disposed (#2781), or more than one run_created. The runtime's consumers stop at the
-- first terminal event; anything after it is "Replay could not consume event" on every replay.
-- Log order is id order within a run (wevt_ ULIDs or evnt_ slots; one scheme per run).
-- Age: newest event's created_at (DB default) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
-- Performance: the CTEs are NOT MATERIALIZED (a materialized `ev` wrote every event of the
-- scope to a temp file), per_entity reads only the event types its tests look at (the
-- plan then groups the run_id-ordered stream with an incremental sort instead of a
-- spilling hash), and `newest` (every event of the entity, as before) is looked up for
-- the few problem entities only.
WITH runs AS NOT MATERIALIZED (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
ev AS NOT MATERIALIZED (
    SELECT e.run_id, e.id, e.type, e.correlation_id, e.created_at
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
),
per_entity AS (
    SELECT run_id, correlation_id,
           count(*) FILTER (WHERE type IN ('step_completed', 'step_failed')) AS step_terminals,
           count(*) FILTER (WHERE type = 'wait_completed') AS wait_terminals,
           max(id) FILTER (WHERE type = 'step_started') AS last_started,
           min(id) FILTER (WHERE type IN ('step_completed', 'step_failed')) AS first_terminal,
           max(id) FILTER (WHERE type = 'hook_received') AS last_received,
           min(id) FILTER (WHERE type = 'hook_disposed') AS first_disposed
    FROM ev
    WHERE correlation_id IS NOT NULL
      AND type IN ('step_completed', 'step_failed', 'wait_completed', 'step_started',
                   'hook_received', 'hook_disposed')
    GROUP BY run_id, correlation_id
),
problems AS (
    SELECT p.run_id, p.correlation_id AS entity_id,
           (SELECT max(o.created_at) FROM workflow.workflow_events o
            WHERE o.run_id = p.run_id AND o.correlation_id = p.correlation_id) AS newest,
           concat_ws('; ',
               CASE WHEN step_terminals > 1 THEN
                   format('%%s terminal events for one step', step_terminals) END,
               CASE WHEN wait_terminals > 1 THEN
                   format('%%s wait_completed events for one wait', wait_terminals) END,
               CASE WHEN last_started > first_terminal THEN
                   'step_started after the step''s terminal event' END,
               CASE WHEN last_received > first_disposed THEN
                   'hook_received after hook_disposed' END) AS detail
    FROM per_entity p
    WHERE step_terminals > 1 OR wait_terminals > 1
       OR last_started > first_terminal OR last_received > first_disposed
    UNION ALL
    SELECT run_id, run_id, max(created_at), format('%%s run_created events', count(*))
    FROM ev
    WHERE type = 'run_created'
    GROUP BY run_id
    HAVING count(*) > 1
)
SELECT p.run_id,
       p.entity_id,
       p.newest AS observed_at,
       p.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       p.detail
FROM problems p
ORDER BY p.newest;
