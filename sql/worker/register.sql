-- register: a worker process announces itself (again, if recovery removed it after a stall).
-- params: worker, host, pid, queue, concurrency, lease
INSERT INTO wfctl.workers (worker_id, host, pid, queue, concurrency, lease_seconds)
VALUES (%(worker)s, %(host)s, %(pid)s, %(queue)s, %(concurrency)s, %(lease)s)
ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now();
