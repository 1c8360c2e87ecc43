-- WF145 a hook event after the hook's hook_disposed (upstream rules
-- hook.no-receive-after-dispose, hook.dispose-once; vw#3645, world-local #2781).
-- beta.29's hook_disposed is two autocommits (DELETE the row, then the event) while
-- hook_received validates the row and then waits for the run row lock: a receipt racing the
-- disposal is journaled after it. Core beta.39's hook consumer finishes at hook_disposed, so a
-- later hook_received (or a second hook_disposed) is offered to no consumer: "Replay could not
-- consume event" on every replay. Not repairable by appending: the extra event must go.
-- Age: the hook's newest event's created_at (DB default) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
per_hook AS (
    SELECT e.run_id, e.correlation_id,
           min(e.id) FILTER (WHERE e.type = 'hook_disposed') AS first_disposed,
           max(e.id) FILTER (WHERE e.type = 'hook_received') AS last_received,
           count(*) FILTER (WHERE e.type = 'hook_disposed') AS disposals,
           max(e.created_at) AS newest
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type IN ('hook_received', 'hook_disposed') AND e.correlation_id IS NOT NULL
    GROUP BY 1, 2
)
SELECT h.run_id,
       h.correlation_id AS entity_id,
       h.newest::timestamptz AS observed_at,
       h.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       concat_ws('; ',
           CASE WHEN h.last_received > h.first_disposed THEN
               format('hook_received %%s after hook_disposed %%s', h.last_received,
                      h.first_disposed) END,
           CASE WHEN h.disposals > 1 THEN
               format('%%s hook_disposed events for one hook', h.disposals) END) AS detail
FROM per_hook h
WHERE h.last_received > h.first_disposed OR h.disposals > 1
ORDER BY h.newest;
