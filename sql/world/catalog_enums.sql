-- catalog_enums: enum types and their labels in order, in the given schemas.
-- Before migration 0015 the world's enums lived in `public`; callers pass both schemas.
-- params: %(schemas)s text[]
SELECT n.nspname AS schema,
       t.typname AS name,
       array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
JOIN pg_catalog.pg_enum e ON e.enumtypid = t.oid
WHERE n.nspname = ANY (%(schemas)s)
GROUP BY 1, 2
ORDER BY 1, 2;
