-- remint_event: give one event a new id (its position in a legacy run's log, which is read in
-- id order). Used only by the opt-in revival (--allow-revive) to move a late step_started
-- before its step's terminal event. Guarded by type.
-- params: run_id, old_id, new_id, type
UPDATE workflow.workflow_events
SET id = %(new_id)s
WHERE run_id = %(run_id)s AND id = %(old_id)s AND type = %(type)s
RETURNING id;
