-- unregister: graceful exit; whatever the worker still holds becomes ready at once for
-- another worker, and the worker's row goes.
-- params: worker
WITH handed AS (
    UPDATE wfctl.run_queue
    SET lease_owner = NULL, lease_until = NULL, ready_at = now()
    WHERE lease_owner = %(worker)s
    RETURNING queue
), gone AS (
    DELETE FROM wfctl.workers WHERE worker_id = %(worker)s
)
SELECT pg_notify('wfctl_worker', queue) FROM (SELECT DISTINCT queue FROM handed) q;
