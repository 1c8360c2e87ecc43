-- run_hooks: a run's hooks for `wfctl runs show` (deleted once the run ends).
-- params: run_id
SELECT hook_id, token, created_at FROM workflow.workflow_hooks
WHERE run_id = %(run_id)s ORDER BY hook_id;
