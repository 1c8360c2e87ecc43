-- next_ready: seconds until the next unleased run of the queue that this worker can run
-- becomes ready (NULL: none scheduled; <= 0: one is ready). An idle worker sleeps that long
-- at most (or until a NOTIFY).
-- params: queue, names (text[])
SELECT extract(epoch FROM min(ready_at) - now())::float8
FROM wfctl.run_queue
WHERE queue = %(queue)s AND lease_owner IS NULL AND ready_at IS NOT NULL
  AND workflow_name = ANY(%(names)s::text[]);
