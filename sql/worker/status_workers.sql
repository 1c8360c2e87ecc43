-- status_workers: live workers (heartbeat within their lease timeout), with the runs they hold.
SELECT w.worker_id, w.host, w.pid, w.queue, w.concurrency, w.started_at, w.heartbeat_at,
       (SELECT count(*) FROM wfctl.run_queue q WHERE q.lease_owner = w.worker_id) AS held,
       extract(epoch FROM now() - w.heartbeat_at)::float8 AS heartbeat_age
FROM wfctl.workers w
WHERE w.heartbeat_at >= now() - make_interval(secs => w.lease_seconds)
ORDER BY w.started_at, w.worker_id;
