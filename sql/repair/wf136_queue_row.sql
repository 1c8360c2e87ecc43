-- wf136_queue_row: the run's row in wfctl's worker queue (none: not handed to workers), read
-- by the WF136 repair to choose its action; locked on apply (the repair's transaction).
-- params: run_id
SELECT run_id, queue, lease_owner, lease_until, lease_until < now() AS expired, ready_at
FROM wfctl.run_queue
WHERE run_id = %(run_id)s;
