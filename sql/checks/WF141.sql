-- WF141 an event log no replay can consume (§8.0, F12): a second terminal event for one step or
-- wait, a step_started after the step's terminal event, or more than one run_created. (A hook
-- event after the hook's hook_disposed, #2781, is WF145's.) The runtime's consumers stop at the
-- first terminal event; anything after it is "Replay could not consume event" on every replay.
-- Log order is id order within a run (wevt_ ULIDs or evnt_ slots; one scheme per run).
-- Age: newest event's created_at (DB default) -> localtimestamp. A duplicate (a second
-- run_created, a second terminal event of one step or wait) is never in flight, whatever its
-- age: no original write is still landing once both copies are there (a repair racing a slow
-- original insert writes exactly this), so it is reported at doctor's defaults at once.
-- params: live_only, run_ids, since, min_age.
-- Performance: one pass over the scope's events, grouped by (run, entity) from the run_id
-- order of the scan (an incremental sort, no spilling hash, no materialized CTE); only the
-- event types the tests look at are read, and a problem entity's `newest` (over all of its
-- events, as always) is looked up for the few problem entities only.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
per_key AS (
    -- Key: the entity (correlation id); a run's run_created events, whatever their
    -- correlation id, form the run's own group (key NULL), as a per-run count.
    SELECT e.run_id,
           CASE WHEN e.type = 'run_created' THEN NULL ELSE e.correlation_id END AS entity,
           count(*) FILTER (WHERE e.type = 'run_created') AS run_createds,
           max(e.created_at) FILTER (WHERE e.type = 'run_created') AS newest_run_created,
           count(*) FILTER (WHERE e.type IN ('step_completed', 'step_failed')) AS step_terminals,
           count(*) FILTER (WHERE e.type = 'wait_completed') AS wait_terminals,
           max(e.id) FILTER (WHERE e.type = 'step_started') AS last_started,
           min(e.id) FILTER (WHERE e.type IN ('step_completed', 'step_failed')) AS first_terminal
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type = 'run_created'
       OR (e.correlation_id IS NOT NULL
           AND e.type IN ('step_completed', 'step_failed', 'wait_completed', 'step_started'))
    GROUP BY 1, 2
),
problems AS (
    SELECT k.run_id,
           coalesce(k.entity, k.run_id) AS entity_id,
           CASE WHEN k.entity IS NULL THEN k.newest_run_created
                ELSE (SELECT max(o.created_at) FROM workflow.workflow_events o
                      WHERE o.run_id = k.run_id AND o.correlation_id = k.entity) END AS newest,
           CASE WHEN k.entity IS NULL THEN format('%%s run_created events', k.run_createds)
                ELSE concat_ws('; ',
                    CASE WHEN k.step_terminals > 1 THEN
                        format('%%s terminal events for one step', k.step_terminals) END,
                    CASE WHEN k.wait_terminals > 1 THEN
                        format('%%s wait_completed events for one wait', k.wait_terminals) END,
                    CASE WHEN k.last_started > k.first_terminal THEN
                        'step_started after the step''s terminal event' END) END AS detail,
           k.run_createds > 1 OR k.step_terminals > 1 OR k.wait_terminals > 1 AS duplicate
    FROM per_key k
    WHERE (k.entity IS NULL AND k.run_createds > 1)
       OR (k.entity IS NOT NULL
           AND (k.step_terminals > 1 OR k.wait_terminals > 1
                OR k.last_started > k.first_terminal))
)
SELECT p.run_id,
       p.entity_id,
       p.newest::timestamptz AS observed_at,
       NOT p.duplicate AND p.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       p.detail
FROM problems p
ORDER BY p.newest;
