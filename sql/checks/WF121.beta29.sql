-- WF121 (beta.29 form) half-created run: a run row whose log has no run_created event.
-- beta.29 inserts the run row and then, in a second autocommit, its run_created event; the
-- queue usually still runs it (a log that starts with run_started), and if the job is lost
-- too it is a pending row with no events. No slot markers exist in this era.
-- Age: runs.created_at is a DB default -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
SELECT r.id AS run_id,
       r.id AS entity_id,
       r.created_at::timestamptz AS observed_at,
       r.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('no run_created event; run %%s status %%s spec %%s', r.name, r.status,
              r.spec_version) AS detail
FROM workflow.workflow_runs r
WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
  -- not corruption: retention emptied the run on purpose (expired_at)
  AND r.expired_at IS NULL
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
  AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
  AND r.spec_version ~ '^[0-9]+$' AND r.spec_version::int >= 2
  AND NOT EXISTS (
    SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = r.id AND e.type = 'run_created'
)
ORDER BY r.created_at;
