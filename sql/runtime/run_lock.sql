-- run_lock: one driver per run: a session advisory lock on the run id's hash, taken by the
-- executor for as long as it drives the run (released by run_unlock or on disconnect).
-- params: run_id
SELECT pg_try_advisory_lock(hashtextextended('wfctl.run:' || %(run_id)s, 0));
