-- hook_by_token: the hook holding a token (not unique in the schema: the oldest wins).
-- params: token
SELECT hook_id, run_id, token FROM workflow.workflow_hooks
WHERE token = %(token)s ORDER BY created_at LIMIT 1;
