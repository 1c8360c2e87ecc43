-- road_index: one index by qualified name: valid/ready, its definition, the sessions building
-- it now (a CREATE INDEX CONCURRENTLY in progress leaves it invalid until it finishes). No
-- row: absent. The road's index steps re-read this before acting (an INVALID leftover of a
-- killed build is dropped concurrently and rebuilt; a valid one is compared, not rebuilt).
-- params: %(index)s text (schema-qualified)
SELECT x.indisvalid AND x.indisready AS valid,
       pg_get_indexdef(x.indexrelid) AS definition,
       ARRAY(
           SELECT p.pid
           FROM pg_catalog.pg_stat_progress_create_index p
           WHERE p.index_relid = x.indexrelid
           ORDER BY p.pid
       ) AS builders
FROM pg_catalog.pg_index x
WHERE x.indexrelid = to_regclass(%(index)s);
