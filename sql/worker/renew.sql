-- renew: the heartbeat of a process that drives runs itself (see hold): extend the leases it
-- holds. It is not a worker (no wfctl.workers row: it claims nothing), so only the leases.
-- Returns the runs renewed.
-- params: owner, lease (seconds), runs (text[])
UPDATE wfctl.run_queue
SET lease_until = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(owner)s AND run_id = ANY(%(runs)s::text[])
RETURNING run_id;
