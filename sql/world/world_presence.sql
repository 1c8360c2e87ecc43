-- world_presence: which of the world's schemas and marker tables exist, without touching data.
-- Only pg_catalog is read (no to_regclass: it needs USAGE on the schema), so this works for
-- any role, before privileges are checked: a role without access to graphile_worker still
-- learns that the queue exists, and the queue checks report UNKNOWN instead of failing all.
-- has_run_queue: wfctl's worker queue (revision w0004), which WF136 reads.
-- in_recovery: a hot standby (or a server still replaying WAL) takes no write at all.
WITH rel AS (
    SELECT n.nspname || '.' || c.relname AS name, c.oid
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
