-- road_privileges: what the road needs of the connected role, per object, before anything is
-- written: ownership (membership in the owner role) of every table it alters or indexes and
-- of every enum it moves, CREATE on the schemas it creates in or moves types to, INSERT and
-- SELECT on drizzle's bookkeeping table (the rows it records), ownership of that table (the
-- progress marker is its comment). One row per missing grant.
-- params: %(tables)s text[] (schema-qualified), %(schemas)s text[]
WITH t AS (
    SELECT unnest(%(tables)s::text[]) AS name
)
SELECT t.name AS object,
       'ownership (member of role ' || pg_get_userbyid(c.relowner) || ')' AS needs
FROM t
JOIN pg_catalog.pg_class c ON c.oid = to_regclass(t.name)
WHERE NOT pg_has_role(current_user, c.relowner, 'USAGE')
UNION ALL
SELECT s AS object, 'CREATE on the schema' AS needs
FROM unnest(%(schemas)s::text[]) AS s
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n WHERE n.nspname = s)
  AND NOT has_schema_privilege(s, 'CREATE')
UNION ALL
SELECT 'workflow_drizzle.workflow_migrations', p || ' on the table'
FROM unnest(ARRAY['SELECT', 'INSERT']) AS p
WHERE to_regclass('workflow_drizzle.workflow_migrations') IS NOT NULL
  AND NOT has_table_privilege('workflow_drizzle.workflow_migrations', p);
