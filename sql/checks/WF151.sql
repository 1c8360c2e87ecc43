-- WF151 catalog drift, the part SQL answers directly: INVALID indexes in the world's schemas,
-- leftovers of a failed CREATE INDEX CONCURRENTLY (e.g. an interrupted online key swap). The
-- column-by-column comparison with the era's expected catalog (missing columns after a
-- 4.3.7 -> beta.29 upgrade that skipped 0011-0014, reference §1.6) is done in Python with
-- the catalog queries of sql/world/. Not per run: run_id is NULL.
-- params: none (the common parameters are passed and ignored).
SELECT NULL::text AS run_id,
       n.nspname || '.' || i.relname AS entity_id,
       NULL::timestamptz AS observed_at,
       false AS in_flight,
       format('index %%s on %%s is INVALID: %%s', i.relname, t.relname,
              pg_get_indexdef(i.oid)) AS detail
FROM pg_catalog.pg_index x
JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname IN ('workflow', 'workflow_drizzle')
  AND NOT x.indisvalid
ORDER BY 2;
