-- insert_event_at_next_slot: append at the run's next slot, the id computed inside the INSERT
-- (as the slot-era world does, reference §3.6): one past the run's highest evnt_ id. A
-- concurrent writer taking the same slot makes this insert do nothing; the caller retries.
-- ON CONFLICT without a target also absorbs the creation unique index (the caller then
-- checks whether the creation event exists). payload_cbor is the CBOR of the eventData map.
-- params: run_id, type, correlation_id, payload_cbor, spec_version
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
SELECT 'evnt_' || lpad((coalesce((
           SELECT substring(prev.id FROM 6)::bigint
           FROM workflow.workflow_events prev
           WHERE prev.run_id = %(run_id)s
           ORDER BY prev.id DESC
           LIMIT 1), 0) + 1)::text, 26, '0'),
       %(type)s, %(correlation_id)s, %(run_id)s, %(payload_cbor)s, %(spec_version)s
ON CONFLICT DO NOTHING
RETURNING id, created_at;
