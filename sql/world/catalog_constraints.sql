-- catalog_constraints: primary keys, unique, check and foreign keys in the given schemas.
-- NOT NULL is compared per column (catalog_columns), not here.
-- params: %(schemas)s text[]
SELECT n.nspname AS schema,
       t.relname AS "table",
       c.conname AS name,
       c.contype AS kind,
       pg_get_constraintdef(c.oid) AS definition
FROM pg_catalog.pg_constraint c
JOIN pg_catalog.pg_class t ON t.oid = c.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = ANY (%(schemas)s)
  AND c.contype IN ('p', 'u', 'c', 'f', 'x')
ORDER BY 1, 2, 3;
