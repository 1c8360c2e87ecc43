-- log: past repairs, newest first, optionally for one run.
-- params: run_id (NULL for all), limit
SELECT id, at, db_user, wfctl_version, reason, code, run_id, entity_id, event_ids, details
FROM wfctl.repair_log
WHERE %(run_id)s::text IS NULL OR run_id = %(run_id)s
ORDER BY id DESC
LIMIT %(limit)s;
