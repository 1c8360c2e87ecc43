-- hook_type_by_token: the payload type recorded for the active hook holding a token (the
-- oldest hook, as hook_by_token picks it); no row for an untyped or unknown hook.
-- params: token
SELECT t.type_ref
FROM workflow.workflow_hooks h
JOIN wfctl.hook_types t ON t.run_id = h.run_id AND t.hook_id = h.hook_id
WHERE h.token = %(token)s
ORDER BY h.created_at
LIMIT 1;
