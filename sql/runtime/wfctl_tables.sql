-- wfctl_tables: which of wfctl's own tables this database has: the worker's queue (alembic
-- revision w0004) and the hook tables (w0006: kept early deliveries, typed hooks' types).
SELECT to_regclass('wfctl.run_queue') IS NOT NULL AS queue,
       to_regclass('wfctl.hook_inbox') IS NOT NULL AS hooks;
