-- has_queue: whether this database has the worker's tables (alembic revision w0004).
SELECT to_regclass('wfctl.run_queue') IS NOT NULL;
