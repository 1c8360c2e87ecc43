-- Tab completion: run ids starting with what is typed, newest first (bounded).
-- params: prefix, limit
SELECT id
FROM workflow.workflow_runs
WHERE id LIKE replace(replace(%(prefix)s::text, '_', '\_'), '%%', '\%%') || '%%'
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;
