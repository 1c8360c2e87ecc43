-- release: the worker stops driving a run that has not ended. ready_at = its next timer (a
-- wait's resumeAt or a step's retry_after; NULL = parked on a hook), unless a wake-up came in
-- while it was held (wake_seq moved): then it is ready at once. Only the lease's owner
-- releases; a ready row is announced.
-- params: run_id, worker, seen (wake_seq at claim), ready_at (timestamptz or NULL)
WITH released AS (
    UPDATE wfctl.run_queue
    SET lease_owner = NULL,
        lease_until = NULL,
        ready_at = CASE WHEN wake_seq <> %(seen)s THEN now()
                        ELSE %(ready_at)s::timestamptz END
    WHERE run_id = %(run_id)s AND lease_owner = %(worker)s
    RETURNING queue, ready_at
)
SELECT pg_notify('wfctl_worker', queue) FROM released WHERE ready_at <= now();
