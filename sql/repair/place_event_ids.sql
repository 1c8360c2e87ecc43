-- place_event_ids: last step of a renumbering (see move_event_ids): every parked id of the
-- run takes its final slot id.
-- params: run_id
UPDATE workflow.workflow_events e
SET id = substring(e.id FROM 12)
WHERE e.run_id = %(run_id)s AND e.id LIKE 'wfctl\_park\_%%'
RETURNING e.id;
