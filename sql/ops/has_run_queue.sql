-- has_run_queue: does this database carry the Python worker's queue (wfctl.run_queue)?
SELECT to_regclass('wfctl.run_queue') IS NOT NULL AS present;
