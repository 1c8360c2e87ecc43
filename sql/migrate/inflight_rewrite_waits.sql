-- inflight_rewrite_waits: the run's wait rows under their new keys (`<run_id>-<wait id>`).
-- params: run_id, mapping (jsonb old id -> new id)
UPDATE workflow.workflow_waits w
SET wait_id = w.run_id || '-' || m.value
FROM jsonb_each_text(%(mapping)s::jsonb) AS m
WHERE w.run_id = %(run_id)s AND w.wait_id = w.run_id || '-' || m.key;
