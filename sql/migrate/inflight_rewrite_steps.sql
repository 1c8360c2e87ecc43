-- inflight_rewrite_steps: the run's step rows under their new ids (step_id is the key).
-- params: run_id, mapping (jsonb old id -> new id)
UPDATE workflow.workflow_steps s
SET step_id = m.value
FROM jsonb_each_text(%(mapping)s::jsonb) AS m
WHERE s.run_id = %(run_id)s AND s.step_id = m.key;
