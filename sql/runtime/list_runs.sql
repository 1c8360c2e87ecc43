-- list_runs: newest runs first, optionally filtered by status and name, a page at a time.
-- error_code (beta.29 on) is read from the row's jsonb form: NULL on a 4.x world.
-- params: status (or NULL), name (or NULL): a substring of the stored name
--         (`workflow//py:shop.flows//checkout`) or of the short name tables show
--         (`shop.flows.checkout`, engine.short_name); after (or NULL): the last run id of the
--         previous page (keyset: rows strictly older in (created_at, id) order); limit: the
--         page size plus one, so the caller knows whether there is more.
WITH cursor_row AS (
    SELECT created_at, id FROM workflow.workflow_runs WHERE id = %(after)s::text
)
SELECT r.id, r.status::text AS status, r.name, r.created_at, r.completed_at,
       to_jsonb(r) ->> 'error_code' AS error_code
FROM workflow.workflow_runs r
WHERE (%(status)s::text IS NULL OR status::text = %(status)s::text)
  AND (%(name)s::text IS NULL
       OR strpos(name, %(name)s::text) > 0
       OR strpos(regexp_replace(name, '^(?:step|workflow)//(?:py:)?(.+)//([^/]*)$', '\1.\2'),
                 %(name)s::text) > 0)
  AND (%(after)s::text IS NULL
       OR (created_at, id) < (SELECT created_at, id FROM cursor_row))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;
