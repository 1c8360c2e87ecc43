-- WF113 run row terminal with no run_completed / run_failed / run_cancelled event (§8 F6).
-- beta.29 updates the run, deletes its hooks and waits, then inserts the terminal event in a
-- later autocommit. The run is effectively over, but its log is incomplete. Legacy-spec runs
-- (spec_version NULL or <= 1) are excepted: their run_cancelled never writes an event.
-- Terminal runs are outside the default live scope: this check speaks with --all, --run or --since.
-- Age: completed_at is written by the JS clock in UTC.
-- Age, either column type: to_timestamp(extract(epoch FROM x)) is x's instant, reading a
-- `timestamp` as UTC wall time (as drizzle writes JS dates) and a `timestamptz` (upstream
-- 0026) as itself, so the gate is right on servers outside UTC for both.
-- params: live_only, run_ids, since, min_age.
SELECT r.id AS run_id,
       r.id AS entity_id,
       to_timestamp(extract(epoch FROM coalesce(r.completed_at, r.updated_at))) AS observed_at,
       to_timestamp(extract(epoch FROM coalesce(r.completed_at, r.updated_at)))
           >= now() - %(min_age)s::interval AS in_flight,
       format('run %%s is %%s but has no %%s event', r.name, r.status,
              'run_' || r.status::text) AS detail
FROM workflow.workflow_runs r
WHERE r.status IN ('completed', 'failed', 'cancelled')
  AND NOT %(live_only)s
  -- not corruption: retention emptied the run (expired_at), or its spec is >= 9 (the log
  -- is authoritative there: the package no longer gates writes on these rows)
  AND r.expired_at IS NULL
  AND NOT coalesce(substring(r.spec_version FROM '^[0-9]{1,9}$')::int >= 9, false)
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
  AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
  AND r.spec_version ~ '^[0-9]+$' AND r.spec_version::int > 1
  AND NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = r.id
      -- implied by the status filter above; lets --all hash-join a filtered scan of the
      -- run_* events instead of walking every event in run_id index order
      AND e.type IN ('run_completed', 'run_failed', 'run_cancelled')
      AND e.type = 'run_' || r.status::text
)
ORDER BY observed_at;
