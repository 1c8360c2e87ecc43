-- insert_events_at_next_slots: append several events to a slot-numbered run in ONE statement,
-- at the run's next slots (one past its highest evnt_ id, computed inside the INSERT as the
-- slot-era world does, reference §3.6), in the order given. No ON CONFLICT: a concurrent
-- writer that took one of these slots, or a duplicate creation event, raises unique_violation
-- and aborts the caller's transaction, which then retries or reports it whole (a batch never
-- lands in part). Used by the runtime's store inside pipelined transactions.
-- params: run_id, types[], correlation_ids[], payloads[] (bytea, CBOR), spec_versions[]
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
SELECT 'evnt_' || lpad((base.slot + e.n)::text, 26, '0'),
       e.type, e.correlation_id, %(run_id)s::varchar, e.payload_cbor, e.spec_version
FROM (SELECT coalesce((
          SELECT substring(prev.id FROM 6)::bigint
          FROM workflow.workflow_events prev
          WHERE prev.run_id = %(run_id)s::varchar
          ORDER BY prev.id DESC
          LIMIT 1), 0) AS slot) AS base,
     unnest(%(types)s::varchar[], %(correlation_ids)s::varchar[], %(payloads)s::bytea[],
            %(spec_versions)s::int[]) WITH ORDINALITY AS e(type, correlation_id, payload_cbor, spec_version, n)
ORDER BY e.n
RETURNING id, created_at;
