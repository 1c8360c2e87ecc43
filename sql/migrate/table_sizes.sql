-- table_sizes: size and estimated rows (planner statistics, no scan) of the world's tables,
-- for `wfctl migrate status`'s estimate of what a migration would block.
SELECT n.nspname || '.' || c.relname AS "table",
       greatest(c.reltuples, 0)::bigint AS estimated_rows,
       pg_total_relation_size(c.oid) AS total_bytes,
       pg_size_pretty(pg_total_relation_size(c.oid)) AS total_size
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'workflow' AND c.relkind IN ('r', 'p')
ORDER BY pg_total_relation_size(c.oid) DESC, 1;
