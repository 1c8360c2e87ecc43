-- WF103 hook row with no hook_created event (reference §8 F3).
-- Self-healing in beta.29: the next hook_created for the same (run, hook) completes the write,
-- so this is informational unless it persists.
-- Age: workflow_hooks.created_at is a DB default -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
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
SELECT h.run_id,
       h.hook_id AS entity_id,
       h.created_at::timestamptz AS observed_at,
       h.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('hook %%s token %%s', h.hook_id, left(h.token, 8) || '...') AS detail
FROM runs r
JOIN workflow.workflow_hooks h ON h.run_id = r.id
WHERE NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = h.run_id AND e.correlation_id = h.hook_id AND e.type = 'hook_created'
)
ORDER BY h.created_at;
