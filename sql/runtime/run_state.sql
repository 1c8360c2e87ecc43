-- run_state: what a client shows of one run (status, output, error, and for a cancelled run
-- the payload of its run_cancelled event, which carries the reason), e.g. after the run's
-- terminal notification (channel wfctl_run_end), or for `Client.get()`.
-- params: run_id
SELECT r.id, r.status::text AS status, r.name, r.output_cbor, r.error_cbor, r.error_code,
       r.created_at, r.completed_at,
       CASE WHEN r.status::text = 'cancelled' THEN (
           SELECT e.payload_cbor FROM workflow.workflow_events e
           WHERE e.run_id = r.id AND e.type = 'run_cancelled'
           ORDER BY e.id DESC LIMIT 1) END AS cancelled_cbor
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
