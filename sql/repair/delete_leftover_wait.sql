-- delete_leftover_wait: WF104's repair for a wait row of a finished run: delete it, exactly
-- as the run's end does. Guarded: only while the run is still terminal.
-- params: run_id, correlation_id
DELETE FROM workflow.workflow_waits w
USING workflow.workflow_runs r
WHERE w.wait_id = %(run_id)s || '-' || %(correlation_id)s AND r.id = w.run_id
  AND r.status IN ('completed', 'failed', 'cancelled')
RETURNING w.wait_id;
