-- register: a worker process announces itself (again, if recovery removed it after a stall),
-- with the workflow names it serves.
-- params: worker, host, pid, queue, concurrency, lease, workflows (text[])
INSERT INTO wfctl.workers (worker_id, host, pid, queue, concurrency, lease_seconds, workflows)
VALUES (%(worker)s, %(host)s, %(pid)s, %(queue)s, %(concurrency)s, %(lease)s,
        %(workflows)s::text[])
ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now(), workflows = EXCLUDED.workflows;
