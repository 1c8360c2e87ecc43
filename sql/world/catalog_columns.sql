-- catalog_columns: every live column of every table in the given schemas, in column order.
-- Used to compare a world's catalog with the one the real package creates (bootstrap proof,
-- doctor WF151). Dropped columns are skipped: their attnums are history, not shape.
-- params: %(schemas)s text[]
SELECT n.nspname AS schema,
       c.relname AS "table",
       a.attname AS column,
       format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null,
       pg_get_expr(d.adbin, d.adrelid) AS "default",
       row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = ANY (%(schemas)s)
  AND c.relkind IN ('r', 'p')
  AND a.attnum > 0
  AND NOT a.attisdropped
ORDER BY 1, 2, 7;
