-- inflight_lock_run: the first lock of a carry's transaction. FOR UPDATE on the run row
-- serialises the carry against run transitions and hook_received (which lock the same row)
-- and against a second carry or repair of the run; the carry then re-reads everything it
-- planned from. Waits at most lock_timeout.
-- params: run_id
SELECT r.id, r.status::text AS status
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s
FOR UPDATE;
