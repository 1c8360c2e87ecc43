-- complete_step_row: step_completed's row change, guarded (not terminal, §3.4). A fragment,
-- included as the CTE `u` of complete_step.sql and commit_step.sql, which raise (with
-- complete_step_check) unless it changed exactly one row.
-- params: step_id, output_cbor
UPDATE workflow.workflow_steps
SET status = 'completed', output_cbor = %(output_cbor)s,
    completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'
WHERE step_id = %(step_id)s AND status NOT IN ('completed', 'failed', 'cancelled')
RETURNING step_id
