-- world_presence: which of the world's schemas and marker tables exist, without touching data.
-- Only pg_catalog is read (no to_regclass: it needs USAGE on the schema), so this works for
-- any role, before privileges are checked: a role without access to graphile_worker still
-- learns that the queue exists, and the queue checks report UNKNOWN instead of failing all.
-- has_run_queue: wfctl's worker queue (revision w0004), which WF136 reads.
-- in_recovery: a hot standby (or a server still replaying WAL) takes no write at all.
-- world_tables: the tables of schema workflow that exist (a world missing one is incomplete).
-- queue_hidden: graphile_worker's tables whose rows row-level security hides from this role.
-- graphile-worker enables RLS on its _private_* tables and creates no policy, so a role that
-- neither owns them nor has BYPASSRLS reads 0 rows, with no error. row_security_active() says
-- whether RLS applies to the current role (not to owners, superusers, BYPASSRLS roles);
-- the rows are all visible only with a permissive SELECT (or ALL) policy for the role whose
-- USING is `true`, and no restrictive policy for it. Anything else: hidden, in whole or part.
-- (A role without USAGE/SELECT there is not "hidden": its queries fail, insufficient privilege.)
WITH rel AS (
    SELECT n.nspname || '.' || c.relname AS name, c.oid, c.relnamespace
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname IN ('workflow', 'workflow_drizzle', 'graphile_worker')
      AND c.relkind IN ('r', 'p')
)
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'workflow') AS has_workflow,
       EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'workflow_drizzle')
           AS has_drizzle,
       EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'graphile_worker')
           AS has_graphile,
       EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'wfctl') AS has_wfctl,
       EXISTS (SELECT 1 FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'wfctl' AND c.relname = 'run_queue' AND c.relkind = 'r')
           AS has_run_queue,
       EXISTS (SELECT 1 FROM rel WHERE name = 'workflow.workflow_events') AS has_events,
       EXISTS (SELECT 1 FROM rel WHERE name = 'workflow.workflow_event_slots') AS has_event_slots,
       EXISTS (SELECT 1 FROM rel WHERE name = 'workflow_drizzle.workflow_migrations')
           AS has_migrations_table,
       EXISTS (SELECT 1 FROM rel WHERE name = 'graphile_worker._private_jobs')
           AS has_graphile_jobs,
       ARRAY(SELECT name FROM rel WHERE name LIKE 'workflow.%' ORDER BY name) AS world_tables,
       ARRAY(
           SELECT rel.name FROM rel
           WHERE rel.name LIKE 'graphile\_worker.\_private\_%'
             AND pg_catalog.has_schema_privilege(rel.relnamespace, 'USAGE')
             AND pg_catalog.has_table_privilege(rel.oid, 'SELECT')
             AND pg_catalog.row_security_active(rel.oid)
             AND (NOT EXISTS (
                      SELECT 1 FROM pg_catalog.pg_policy p
                      WHERE p.polrelid = rel.oid AND p.polpermissive AND p.polcmd IN ('r', '*')
                        AND pg_catalog.pg_get_expr(p.polqual, p.polrelid) = 'true'
                        AND (p.polroles = '{0}' OR EXISTS (
                                 SELECT 1 FROM unnest(p.polroles) AS pr(oid)
                                 WHERE pg_catalog.pg_has_role(current_user, pr.oid, 'USAGE'))))
                  OR EXISTS (
                      SELECT 1 FROM pg_catalog.pg_policy p
                      WHERE p.polrelid = rel.oid AND NOT p.polpermissive
                        AND (p.polroles = '{0}' OR EXISTS (
                                 SELECT 1 FROM unnest(p.polroles) AS pr(oid)
                                 WHERE pg_catalog.pg_has_role(current_user, pr.oid, 'USAGE')))))
           ORDER BY rel.name
       ) AS queue_hidden,
       (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
          FROM pg_catalog.pg_constraint c
          CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
         WHERE c.conrelid = (SELECT oid FROM rel WHERE name = 'workflow.workflow_events')
           AND c.contype = 'p'
       ) AS events_key,
       current_setting('server_version') AS server_version,
       current_setting('server_version_num')::int AS server_version_num,
       pg_catalog.pg_is_in_recovery() AS in_recovery,
       current_database() AS database,
       current_user AS "user";
