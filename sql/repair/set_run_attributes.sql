-- set_run_attributes: WF149's repair, the run row's attributes set to the fold of its log.
-- Guarded: only while the row still holds what the repair read under lock (`expected`), so
-- a concurrent attr_set is never overwritten. updated_at is left alone (the run did not move).
-- params: run_id, attributes (json text), expected (json text)
UPDATE workflow.workflow_runs
SET attributes = %(attributes)s::jsonb
WHERE id = %(run_id)s AND attributes = %(expected)s::jsonb
RETURNING id;
