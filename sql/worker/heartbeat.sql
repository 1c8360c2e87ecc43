-- heartbeat: the worker is alive; renew the leases of the runs its slots are driving (only
-- those: a run a slot dropped after a lost connection is left to expire and be recovered).
-- Returns the runs renewed (a lease recovery took after a stall is no longer ours).
-- params: worker, lease (seconds), runs (text[])
WITH alive AS (
    UPDATE wfctl.workers SET heartbeat_at = now() WHERE worker_id = %(worker)s
    RETURNING worker_id
)
UPDATE wfctl.run_queue
SET lease_until = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(worker)s AND run_id = ANY(%(runs)s::text[])
RETURNING run_id, (SELECT count(*) FROM alive) AS registered;
