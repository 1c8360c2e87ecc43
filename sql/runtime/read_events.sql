-- read_events: a run's log in id order (the order every runtime replays it in), from an
-- optional exclusive lower bound.
-- params: run_id, after (id or NULL)
SELECT id, type, correlation_id, payload_cbor, created_at
FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND (%(after)s::varchar IS NULL OR id > %(after)s::varchar)
ORDER BY id;
