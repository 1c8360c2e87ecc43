-- state: where the event-key swap stands, from pg_catalog only (no table data is read), so
-- every phase of `wfctl migrate --online` can tell whether it already happened. One row.
-- Objects (reference §1.4, §1.6 row 0019): the old key workflow_events_pkey (id), the new key
-- workflow_events_run_id_id_pk (run_id, id), the index built beforehand and adopted by the
-- key, workflow_events_run_id_id_idx, the redundant workflow_events_run_id_index, the 0018
-- column workflow_hooks.token_retention_until and the marker table workflow_event_slots.
WITH ev AS (
    SELECT to_regclass('workflow.workflow_events') AS oid
), pk AS (
    SELECT c.conname, pg_get_constraintdef(c.oid) AS definition
    FROM pg_catalog.pg_constraint c, ev
    WHERE c.conrelid = ev.oid AND c.contype = 'p'
), key_index AS (
    SELECT x.indexrelid, x.indisvalid, x.indisready, pg_get_indexdef(x.indexrelid) AS definition
    FROM pg_catalog.pg_index x, ev
    WHERE x.indexrelid = to_regclass('workflow.workflow_events_run_id_id_idx')
      AND x.indrelid = ev.oid
), run_id_index AS (
    SELECT x.indisvalid
    FROM pg_catalog.pg_index x
    WHERE x.indexrelid = to_regclass('workflow.workflow_events_run_id_index')
)
SELECT (SELECT oid FROM ev) IS NOT NULL AS has_events,
       (SELECT conname FROM pk) AS pk_name,
       (SELECT definition FROM pk) AS pk_definition,
       -- A valid, total, unique index on (id) alone makes (run_id, id) duplicates impossible.
       EXISTS (
           SELECT 1
           FROM pg_catalog.pg_index x
           JOIN pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attname = 'id'
           WHERE x.indrelid = (SELECT oid FROM ev)
             AND x.indisunique AND x.indisvalid AND x.indpred IS NULL AND x.indexprs IS NULL
             AND x.indnkeyatts = 1 AND x.indkey[0] = a.attnum
       ) AS id_is_unique,
       (SELECT CASE WHEN indisvalid AND indisready THEN 'valid' ELSE 'invalid' END
          FROM key_index) AS key_index,
       (SELECT definition FROM key_index) AS key_index_definition,
       -- Sessions building that index right now (a CREATE INDEX CONCURRENTLY in progress
       -- leaves it invalid until it finishes).
       ARRAY(
           SELECT p.pid
           FROM pg_catalog.pg_stat_progress_create_index p
           WHERE p.relid = (SELECT oid FROM ev)
             AND p.index_relid = (SELECT indexrelid FROM key_index)
           ORDER BY p.pid
       ) AS key_index_builders,
       (SELECT CASE WHEN indisvalid THEN 'valid' ELSE 'invalid' END
          FROM run_id_index) AS run_id_index,
       EXISTS (
           SELECT 1
           FROM pg_catalog.pg_attribute a
           WHERE a.attrelid = to_regclass('workflow.workflow_hooks')
             AND a.attname = 'token_retention_until' AND NOT a.attisdropped
       ) AS has_hook_column,
       to_regclass('workflow.workflow_event_slots') IS NOT NULL AS has_event_slots,
       to_regclass('workflow_drizzle.workflow_migrations') IS NOT NULL AS has_migrations_table,
       current_setting('server_version_num')::int AS server_version_num,
       pg_backend_pid() AS pid;
