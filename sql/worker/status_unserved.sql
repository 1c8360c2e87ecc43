-- status_unserved: ready runs (unleased, due) whose workflow no live worker of their queue
-- serves: they wait until a worker that imports that workflow name starts. A worker that did
-- not record its names (workflows NULL, an earlier wfctl) counts as serving everything.
-- Live = heartbeat within the worker's lease timeout (as status_workers).
SELECT q.queue, q.workflow_name, count(*) AS runs,
       (array_agg(q.run_id ORDER BY q.ready_at, q.run_id))[1] AS oldest_run,
       extract(epoch FROM now() - min(q.ready_at))::float8 AS oldest_age
FROM wfctl.run_queue q
WHERE q.lease_owner IS NULL AND q.ready_at <= now()
  AND NOT EXISTS (
      SELECT 1 FROM wfctl.workers w
      WHERE w.queue = q.queue
        AND w.heartbeat_at >= now() - make_interval(secs => w.lease_seconds)
        AND (w.workflows IS NULL OR q.workflow_name = ANY (w.workflows))
  )
GROUP BY q.queue, q.workflow_name
ORDER BY q.queue, q.workflow_name;
