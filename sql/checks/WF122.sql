-- WF122 wevt_ (ULID) event ids inside a slot-numbered run (seed run-creation-not-atomic; §8 F8).
-- The slot allocator reads the run's highest id; a wevt_ id sorts above every evnt_ id, so every
-- later allocation fails with 22P02 and core >= beta.47 refuses the log ("Event id is not
-- slot-numbered"). Slot-era worlds only.
-- Age: newest event's created_at (DB default) -> localtimestamp.
-- The prefix test is a LIKE pattern rather than left(id, 5) = 'wevt_': same rows, and the
-- planner estimates it from the id histogram (left() got a flat half percent, and --all
-- then sorted ~10M legacy events on disk).
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    JOIN workflow.workflow_event_slots m ON m.run_id = r.id
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
)
SELECT r.id AS run_id,
       min(e.id) AS entity_id,
       max(e.created_at)::timestamptz AS observed_at,
       max(e.created_at) >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('%%s wevt_ event(s) in a slot-numbered run, first %%s (%%s)', count(*),
              min(e.id), (array_agg(e.type ORDER BY e.id))[1]) AS detail
FROM runs r
JOIN workflow.workflow_events e ON e.run_id = r.id AND e.id LIKE 'wevt\_%%'
GROUP BY r.id
ORDER BY observed_at;
