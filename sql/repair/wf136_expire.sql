-- wf136_expire: clear an expired lease of an undriven wfctl run (WF136), as a worker's
-- recovery does: ready now, recoveries + 1, a NOTIFY for the queue's idle workers. A lease
-- still live (renewed meanwhile) is never touched: no row, "state moved".
-- params: run_id
WITH expired AS (
    UPDATE wfctl.run_queue
    SET lease_owner = NULL, lease_until = NULL, ready_at = now(), recoveries = recoveries + 1
    WHERE run_id = %(run_id)s AND lease_owner IS NOT NULL AND lease_until < now()
    RETURNING run_id, queue
)
SELECT run_id, pg_notify('wfctl_worker', queue) FROM expired;
