-- missing_table_privileges: "permission denied for table <name>" does not say which privilege
-- the statement needed; this lists, for every table of that name, which of SELECT, INSERT,
-- UPDATE and DELETE the session's role lacks, so the error line can name them.
-- params: %(name)s text (the table name as the server's message gives it)
SELECT
    quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS table_name,
    array_agg(p.privilege ORDER BY p.ord) AS missing
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE'])
    WITH ORDINALITY AS p (privilege, ord)
WHERE c.relname = %(name)s::text
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND NOT has_table_privilege(c.oid, p.privilege)
GROUP BY n.nspname, c.relname
ORDER BY n.nspname, c.relname;
