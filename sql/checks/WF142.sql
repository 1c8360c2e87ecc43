-- WF142 hook_received sorts before its hook_created (upstream rule hook.received-after-created).
-- beta.29 writes hook_created as two autocommits (hook row, then event, reference §3.4); a
-- hook resumed inside that window is journaled first (hook_received needs only the row), and
-- the later hook_created completes the orphan. Both runtimes accept the log: core beta.39's
-- hook consumer takes payloads before the creation event and wfctl's engine keys a payload by
-- the hook the code created. Informational: the log reads out of order, nothing is stuck.
-- Completed runs keep it: this check speaks for them with --all, --run or --since.
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
           min(e.id) FILTER (WHERE e.type = 'hook_received') AS first_received,
           min(e.id) FILTER (WHERE e.type = 'hook_created') AS created,
           count(*) FILTER (WHERE e.type = 'hook_received') AS received,
           max(e.created_at) AS newest
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type IN ('hook_created', 'hook_received') AND e.correlation_id IS NOT NULL
    GROUP BY 1, 2
)
SELECT h.run_id,
       h.correlation_id AS entity_id,
       h.newest::timestamptz AS observed_at,
       h.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('hook_received %%s sorts before hook_created %%s (%%s receipt(s))',
              h.first_received, h.created, h.received) AS detail
FROM per_hook h
WHERE h.first_received < h.created
ORDER BY h.newest;
