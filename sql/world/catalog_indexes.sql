-- catalog_indexes: every index (including those backing constraints) in the given schemas,
-- with its full definition (columns, uniqueness, partial predicate) and validity.
-- An INVALID index is a leftover of a failed CREATE INDEX CONCURRENTLY.
-- params: %(schemas)s text[]
SELECT n.nspname AS schema,
       t.relname AS "table",
       i.relname AS index,
       pg_get_indexdef(i.oid) AS definition,
       x.indisvalid AS valid
FROM pg_catalog.pg_index x
JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = ANY (%(schemas)s)
ORDER BY 1, 2, 3;
