-- world_presence: which of the world's schemas and marker tables exist, without touching data.
-- Readable by any role: only pg_catalog is read, so it works before privileges are checked.
SELECT to_regnamespace('workflow') IS NOT NULL AS has_workflow,
       to_regnamespace('workflow_drizzle') IS NOT NULL AS has_drizzle,
       to_regnamespace('graphile_worker') IS NOT NULL AS has_graphile,
       to_regnamespace('wfctl') IS NOT NULL AS has_wfctl,
       to_regclass('workflow.workflow_events') IS NOT NULL AS has_events,
       to_regclass('workflow.workflow_event_slots') IS NOT NULL AS has_event_slots,
       to_regclass('workflow_drizzle.workflow_migrations') IS NOT NULL AS has_migrations_table,
       to_regclass('graphile_worker._private_jobs') IS NOT NULL AS has_graphile_jobs,
       (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
          FROM pg_catalog.pg_constraint c
          CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
         WHERE c.conrelid = to_regclass('workflow.workflow_events') AND c.contype = 'p'
       ) AS events_key,
       current_setting('server_version') AS server_version,
       current_setting('server_version_num')::int AS server_version_num,
       current_database() AS database,
       current_user AS "user";
