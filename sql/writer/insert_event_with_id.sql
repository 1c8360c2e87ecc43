-- insert_event_with_id: append with an id chosen by the caller (a wevt_ ULID for legacy runs,
-- or evnt_...01 for a run's first slot event). ON CONFLICT DO NOTHING absorbs both a taken
-- id and the creation unique index; the caller tells them apart.
-- params: id, run_id, type, correlation_id, payload_cbor, spec_version
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
VALUES (%(id)s, %(type)s, %(correlation_id)s, %(run_id)s, %(payload_cbor)s, %(spec_version)s)
ON CONFLICT DO NOTHING
RETURNING id, created_at;
