-- Tab completion: workflow names as tables show them (`shop.flows.checkout`, engine.short_name)
-- starting with what is typed, from the newest 10,000 runs (bounded on a big world).
-- params: prefix, limit
SELECT DISTINCT shown
FROM (
    SELECT regexp_replace(name, '^(?:step|workflow)//(?:py:)?(.+)//([^/]*)$', '\1.\2') AS shown
    FROM workflow.workflow_runs
    ORDER BY created_at DESC
    LIMIT 10000
) recent
WHERE starts_with(shown, %(prefix)s::text)
ORDER BY shown
LIMIT %(limit)s;
