-- enqueue: hand a run to the workers of a queue, in the transaction that creates (or adopts)
-- it; NOTIFY is transactional, so idle workers wake only once the run is committed.
-- params: run_id, queue, name
WITH added AS (
    INSERT INTO wfctl.run_queue (run_id, queue, workflow_name)
    VALUES (%(run_id)s, %(queue)s, %(name)s)
    ON CONFLICT (run_id) DO NOTHING
    RETURNING queue
)
SELECT pg_notify('wfctl_worker', queue) FROM added;
