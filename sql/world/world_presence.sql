-- world_presence: which of the world's schemas and marker tables exist, without touching data.
-- Only pg_catalog is read (no to_regclass: it needs USAGE on the schema), so this works for
-- any role, before privileges are checked: a role without access to graphile_worker still
-- learns that the queue exists, and the queue checks report UNKNOWN instead of failing all.
-- has_run_queue: wfctl's worker queue (revision w0004), which WF136 reads.
-- in_recovery: a hot standby (or a server still replaying WAL) takes no write at all.
-- world_tables: the tables of schema workflow that exist (a world missing one is incomplete).
-- hidden: every table whose rows wfctl reasons about (schemas workflow, workflow_drizzle, wfctl;
-- graphile_worker's _private_* tables) that this role cannot be shown to read whole, as
-- {table, why}; what depends on one is UNKNOWN and nothing is written (World.write_refusal).
-- Row-level security: row_security_active() says whether RLS applies to the current role
-- (not to owners without FORCE, superusers, BYPASSRLS roles); the rows are all visible only
-- with a permissive SELECT (or ALL) policy for the role whose USING is `true`, and no
-- restrictive policy for it. Anything else hides rows, in whole or part (a tenant's policy
-- on workflow_events, graphile-worker's _private_* tables, which get RLS and no policy):
-- `why` names the policies that apply. A world table that is a view (a security barrier
-- can filter), a materialized view or a foreign table is not the package's table either.
-- (A role without USAGE/SELECT there is not "hidden": its queries fail, insufficient privilege.)
-- rls_active: RLS applies to this role on some table in scope, even if proven whole: the
-- session may not run with row_security = off (World.guard), which would make those reads fail.
WITH rel AS (
    SELECT n.nspname || '.' || c.relname AS name, c.oid, c.relnamespace
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname IN ('workflow', 'workflow_drizzle', 'graphile_worker')
      AND c.relkind IN ('r', 'p')
),
scope AS (
    SELECT n.nspname || '.' || c.relname AS name, c.oid, c.relnamespace, c.relkind
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND (n.nspname IN ('workflow', 'workflow_drizzle', 'wfctl')
           OR (n.nspname = 'graphile_worker' AND c.relname LIKE '\_private\_%'))
),
readable AS (
    SELECT s.*,
           (s.relkind IN ('r', 'p') AND pg_catalog.row_security_active(s.oid)) AS rls
    FROM scope s
    WHERE pg_catalog.has_schema_privilege(s.relnamespace, 'USAGE')
      AND pg_catalog.has_table_privilege(s.oid, 'SELECT')
),
applying AS (  -- the policies that apply to this role (to PUBLIC or a role it is a member of)
    SELECT p.polrelid, p.polname, p.polpermissive, p.polcmd,
           pg_catalog.pg_get_expr(p.polqual, p.polrelid) AS qual
    FROM pg_catalog.pg_policy p
    WHERE p.polroles = '{0}' OR EXISTS (
              SELECT 1 FROM unnest(p.polroles) AS pr(oid)
              WHERE pg_catalog.pg_has_role(current_user, pr.oid, 'USAGE'))
),
hidden AS (
    SELECT r.name,
           CASE WHEN r.relkind <> 'r' AND r.relkind <> 'p' THEN
                    format('%s is a %s, not a table: what it shows may be filtered',
                           r.name, CASE r.relkind WHEN 'v' THEN 'view'
                                                  WHEN 'm' THEN 'materialized view'
                                                  ELSE 'foreign table' END)
                ELSE format('row-level security on %s hides rows from role %I (%s)', r.name,
                            current_user,
                            coalesce((SELECT 'policies: ' || string_agg(
                                          format('%I%s', a.polname,
                                                 CASE WHEN a.polpermissive THEN ''
                                                      ELSE ' restrictive' END),
                                          ', ' ORDER BY a.polname)
                                      FROM applying a WHERE a.polrelid = r.oid),
                                     'no policy for the role: every row hidden')) END AS why
    FROM readable r
    WHERE (r.relkind NOT IN ('r', 'p') AND r.name LIKE 'workflow.workflow\_%')
       OR (r.rls AND (
               NOT EXISTS (SELECT 1 FROM applying a
                           WHERE a.polrelid = r.oid AND a.polpermissive
                             AND a.polcmd IN ('r', '*') AND a.qual = 'true')
               OR EXISTS (SELECT 1 FROM applying a
                          WHERE a.polrelid = r.oid AND NOT a.polpermissive)))
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
       (SELECT coalesce(jsonb_agg(jsonb_build_object('table', h.name, 'why', h.why)
                                  ORDER BY h.name), '[]')
          FROM hidden h) AS hidden,
       EXISTS (SELECT 1 FROM readable WHERE rls) AS rls_active,
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
