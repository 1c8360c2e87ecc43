-- run_unlock: release run_lock.
-- params: run_id
SELECT pg_advisory_unlock(hashtextextended('wfctl.run:' || %(run_id)s, 0));
