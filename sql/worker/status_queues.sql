-- status_queues: per queue: ready (unleased, due), scheduled (timer in the future), parked
-- (waiting for a hook), leased, past their lease; the oldest ready run and its age.
SELECT queue,
       count(*) FILTER (WHERE lease_owner IS NULL AND ready_at <= now()) AS ready,
       count(*) FILTER (WHERE lease_owner IS NULL AND ready_at > now()) AS scheduled,
       count(*) FILTER (WHERE lease_owner IS NULL AND ready_at IS NULL) AS parked,
       count(*) FILTER (WHERE lease_owner IS NOT NULL) AS leased,
       count(*) FILTER (WHERE lease_owner IS NOT NULL AND lease_until < now()) AS past_lease,
       (array_agg(run_id ORDER BY ready_at, run_id)
            FILTER (WHERE lease_owner IS NULL AND ready_at <= now()))[1] AS oldest_ready,
       extract(epoch FROM now() - min(ready_at)
            FILTER (WHERE lease_owner IS NULL AND ready_at <= now()))::float8 AS oldest_ready_age
FROM wfctl.run_queue
GROUP BY queue
ORDER BY queue;
