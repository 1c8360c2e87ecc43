-- run_waits: a run's waits for `wfctl runs show` (deleted once the run ends).
-- params: run_id
SELECT wait_id, status::text AS status, resume_at, completed_at
FROM workflow.workflow_waits WHERE run_id = %(run_id)s ORDER BY wait_id;
