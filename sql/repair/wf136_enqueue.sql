-- wf136_enqueue: hand an undriven wfctl run to the workers of a queue (WF136): its queue row,
-- ready now, and a NOTIFY that wakes an idle worker once the repair commits. Only a run that
-- is still pending/running and still has no queue row (else no row: "state moved").
-- params: run_id, queue
WITH added AS (
    INSERT INTO wfctl.run_queue (run_id, queue, workflow_name)
    SELECT r.id, %(queue)s, r.name
    FROM workflow.workflow_runs r
    WHERE r.id = %(run_id)s AND r.status IN ('pending', 'running')
    ON CONFLICT (run_id) DO NOTHING
    RETURNING run_id, queue
)
SELECT run_id, pg_notify('wfctl_worker', queue) FROM added;
