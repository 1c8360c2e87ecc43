-- run_event_bounds: the run's first and last event ids and its event spec_version, to place a
-- restored run_created before the first event (legacy ids sort by their ULID time) and to
-- stamp appended events with the spec version the run's events already carry.
-- params: run_id
SELECT min(id) AS first_id, max(id) AS last_id, count(*) AS events,
       (array_agg(spec_version ORDER BY id) FILTER (WHERE spec_version IS NOT NULL))[1]
           AS spec_version
FROM workflow.workflow_events
WHERE run_id = %(run_id)s;
