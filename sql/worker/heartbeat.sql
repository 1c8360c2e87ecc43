-- heartbeat: the worker is alive; renew every lease it holds. Returns the runs it still
-- holds (a lease recovery took after a stall is not renewed: it is no longer ours).
-- params: worker, lease (seconds)
WITH alive AS (
    UPDATE wfctl.workers SET heartbeat_at = now() WHERE worker_id = %(worker)s
    RETURNING worker_id
)
UPDATE wfctl.run_queue
SET lease_until = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(worker)s
RETURNING run_id, (SELECT count(*) FROM alive) AS registered;
