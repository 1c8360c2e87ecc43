-- list_runs: newest runs first, optionally filtered by status and name (substring).
-- params: status (or NULL), name (or NULL), limit
-- error_code / attributes (beta.29 on) are read from the row's jsonb form: NULL on a 4.x world.
SELECT r.id, r.status::text AS status, r.name, r.created_at, r.completed_at,
       to_jsonb(r) ->> 'error_code' AS error_code
FROM workflow.workflow_runs r
WHERE (%(status)s::text IS NULL OR r.status::text = %(status)s::text)
  AND (%(name)s::text IS NULL OR r.name LIKE '%%' || %(name)s::text || '%%')
ORDER BY r.created_at DESC, r.id DESC
LIMIT %(limit)s;
