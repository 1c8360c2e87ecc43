-- WF102 wait row with no wait_created event (reference §8 F2).
-- Every re-sent wait_created is refused "already exists" and writes nothing, so the wait is
-- never completed: the run sits running with its wait past due. The row key is
-- <run_id>-<correlation_id>; the event carries the bare correlation id.
-- Age: workflow_waits.created_at is a DB default -> localtimestamp.
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
SELECT w.run_id,
       substring(w.wait_id FROM length(w.run_id) + 2) AS entity_id,
       w.created_at::timestamptz AS observed_at,
       w.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('wait %%s status %%s resume_at %%s', w.wait_id, w.status,
              to_char(w.resume_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')) AS detail
FROM runs r
JOIN workflow.workflow_waits w ON w.run_id = r.id
WHERE NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = w.run_id
      AND e.correlation_id = substring(w.wait_id FROM length(w.run_id) + 2)
      AND e.type = 'wait_created'
)
ORDER BY w.created_at;
