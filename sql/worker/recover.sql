-- recover: leases that expired (their worker died or stalled past its lease) become ready
-- now; live leases (lease_until in the future) are never touched. Workers whose heartbeat
-- is older than twice their lease are removed. Run under recovery_lock.
WITH expired AS (
    UPDATE wfctl.run_queue
    SET lease_owner = NULL, lease_until = NULL, ready_at = now(), recoveries = recoveries + 1
    WHERE lease_owner IS NOT NULL AND lease_until < now()
    RETURNING run_id, queue
), dead AS (
    DELETE FROM wfctl.workers
    WHERE heartbeat_at < now() - make_interval(secs => 2 * lease_seconds)
    RETURNING worker_id
), told AS (
    SELECT pg_notify('wfctl_worker', queue) FROM (SELECT DISTINCT queue FROM expired) q
)
SELECT (SELECT count(*) FROM expired) AS runs, (SELECT count(*) FROM dead) AS workers,
       (SELECT count(*) FROM told) AS queues;
