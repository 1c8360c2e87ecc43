-- catalog_sequences: sequences in the given schemas with the column that owns them.
-- params: %(schemas)s text[]
SELECT n.nspname AS schema,
       s.relname AS name,
       format_type(q.seqtypid, NULL) AS type,
       q.seqstart AS start,
       q.seqincrement AS increment,
       coalesce(t.relname || '.' || a.attname, '') AS owned_by
FROM pg_catalog.pg_class s
JOIN pg_catalog.pg_namespace n ON n.oid = s.relnamespace
JOIN pg_catalog.pg_sequence q ON q.seqrelid = s.oid
LEFT JOIN pg_catalog.pg_depend d
       ON d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'a'
LEFT JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
WHERE s.relkind = 'S' AND n.nspname = ANY (%(schemas)s)
ORDER BY 1, 2;
