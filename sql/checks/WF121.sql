-- WF121 half-created run (seed run-creation-not-atomic, #3656; §8 F7).
-- Run creation is several autocommits (run row, slot marker, run_created). States reported:
--   no_marker:      a slot-era run (spec_version >= 6, or any evnt_ event) without its marker;
--                   with only wevt_ events it is the restart variant (renumbering needed);
--   no_run_created: a run row whose log has no run_created at all (spec >= 2; legacy excepted).
-- Slot-era worlds only (needs workflow_event_slots); WF121.beta29.sql is the beta.29 form.
-- Age: runs.created_at is a DB default -> localtimestamp.
-- Prefix tests are LIKE prefix patterns rather than left(id, 5) = ...: same rows, and the
-- planner estimates a LIKE prefix from the id histogram (left() got a flat half percent).
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id, r.name, r.status, r.spec_version, r.created_at,
           EXISTS (SELECT 1 FROM workflow.workflow_event_slots m WHERE m.run_id = r.id) AS marked
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      -- not corruption: retention emptied the run on purpose (expired_at)
      AND r.expired_at IS NULL
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
shape AS (
    SELECT r.*,
           (r.spec_version ~ '^[0-9]+$' AND r.spec_version::int >= 6) AS slot_spec,
           EXISTS (SELECT 1 FROM workflow.workflow_events e
                   WHERE e.run_id = r.id AND e.id LIKE 'evnt\_%%') AS has_slot_ids,
           EXISTS (SELECT 1 FROM workflow.workflow_events e
                   WHERE e.run_id = r.id AND e.id LIKE 'wevt\_%%') AS has_legacy_ids,
           EXISTS (SELECT 1 FROM workflow.workflow_events e
                   WHERE e.run_id = r.id AND e.type = 'run_created') AS has_run_created,
           (r.spec_version ~ '^[0-9]+$' AND r.spec_version::int >= 2) AS event_sourced
    FROM runs r
)
SELECT s.id AS run_id,
       s.id AS entity_id,
       s.created_at::timestamptz AS observed_at,
       s.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       concat_ws('; ',
           CASE WHEN NOT s.marked AND (s.slot_spec OR s.has_slot_ids) THEN
               'no slot marker' || CASE WHEN s.has_legacy_ids AND NOT s.has_slot_ids
                                        THEN ' (restart variant: only wevt_ events)' ELSE '' END
           END,
           CASE WHEN NOT s.has_run_created AND s.event_sourced THEN 'no run_created event' END,
           format('run %%s status %%s spec %%s', s.name, s.status, s.spec_version)) AS detail
FROM shape s
WHERE (NOT s.marked AND (s.slot_spec OR s.has_slot_ids))
   OR (NOT s.has_run_created AND s.event_sourced)
ORDER BY s.created_at;
