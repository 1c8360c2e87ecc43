-- set_attribute: one key of a run's attributes, the row change of an attr_set event written
-- in the same transaction (the log and the row agree: WF149). Used for the cancellation
-- request (`wfctl.cancelRequested`); the caller holds the run row FOR UPDATE.
-- params: run_id, key, value (text)
UPDATE workflow.workflow_runs
SET attributes = COALESCE(attributes, '{}'::jsonb) || jsonb_build_object(%(key)s::text, %(value)s::text),
    updated_at = now() AT TIME ZONE 'UTC'
WHERE id = %(run_id)s AND status IN ('pending', 'running');
