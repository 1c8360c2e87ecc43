-- invalid_indexes: INVALID indexes in the world's schemas (leftovers of a failed or
-- interrupted CREATE/DROP INDEX CONCURRENTLY), with the session still building one, if any.
SELECT n.nspname || '.' || i.relname AS index,
       n.nspname || '.' || t.relname AS "table",
       (SELECT p.pid FROM pg_catalog.pg_stat_progress_create_index p
         WHERE p.index_relid = x.indexrelid LIMIT 1) AS building_pid
FROM pg_catalog.pg_index x
JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname IN ('workflow', 'workflow_drizzle') AND NOT (x.indisvalid AND x.indisready)
ORDER BY 1;
