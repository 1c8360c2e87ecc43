-- list_runs: newest runs first, optionally filtered by status and name (substring).
-- params: status (or NULL), name (or NULL), limit
SELECT id, status::text AS status, name, created_at, completed_at, error_code
FROM workflow.workflow_runs
WHERE (%(status)s::text IS NULL OR status::text = %(status)s::text)
  AND (%(name)s::text IS NULL OR name LIKE '%%' || %(name)s::text || '%%')
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;
