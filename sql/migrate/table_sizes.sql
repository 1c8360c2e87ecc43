-- table_sizes: size and estimated rows (planner statistics, no scan) of the world's tables,
-- for `wfctl migrate status`'s estimate of what a migration would block. estimated_rows is
-- NULL for a table never analyzed; heap_bytes (the table alone) drives the build estimate.
SELECT n.nspname || '.' || c.relname AS "table",
       CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END AS estimated_rows,
       pg_relation_size(c.oid) AS heap_bytes,
       pg_total_relation_size(c.oid) AS total_bytes,
       pg_size_pretty(pg_total_relation_size(c.oid)) AS total_size
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'workflow' AND c.relkind IN ('r', 'p')
ORDER BY pg_total_relation_size(c.oid) DESC, 1;
