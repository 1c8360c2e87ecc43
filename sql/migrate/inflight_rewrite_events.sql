-- inflight_rewrite_events: the run's events under their new correlation ids (one statement;
-- `mapping` is a jsonb object old id -> new id). Event ids, order and payloads are untouched.
-- params: run_id, mapping (jsonb)
UPDATE workflow.workflow_events e
SET correlation_id = m.value
FROM jsonb_each_text(%(mapping)s::jsonb) AS m
WHERE e.run_id = %(run_id)s AND e.correlation_id = m.key;
