-- insert_event_with_id_at: insert_event_with_id with an explicit created_at, for an event a
-- repair places BETWEEN existing events of a legacy run: created_at drives the replay clock,
-- so it must lie between its neighbours' (never now(), which would make the clock jump).
-- params: id, run_id, type, correlation_id, payload_cbor, spec_version, created_at
INSERT INTO workflow.workflow_events
    (id, type, correlation_id, run_id, payload_cbor, spec_version, created_at)
VALUES (%(id)s, %(type)s, %(correlation_id)s, %(run_id)s, %(payload_cbor)s, %(spec_version)s,
        %(created_at)s)
ON CONFLICT DO NOTHING
RETURNING id, created_at;
