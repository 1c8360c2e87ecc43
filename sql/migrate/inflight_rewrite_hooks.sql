-- inflight_rewrite_hooks: the run's hook rows under their new ids; tokens stay (callers hold
-- them, and the replay compares them with the token the workflow passed).
-- params: run_id, mapping (jsonb old id -> new id)
UPDATE workflow.workflow_hooks h
SET hook_id = m.value
FROM jsonb_each_text(%(mapping)s::jsonb) AS m
WHERE h.run_id = %(run_id)s AND h.hook_id = m.key;
