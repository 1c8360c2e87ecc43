-- complete_step: step_completed's row change, guarded (not terminal, §3.4).
-- params: step_id, output_cbor
WITH u AS (
    UPDATE workflow.workflow_steps
    SET status = 'completed', output_cbor = %(output_cbor)s,
        completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'
    WHERE step_id = %(step_id)s AND status NOT IN ('completed', 'failed', 'cancelled')
    RETURNING step_id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: step ' || %(step_id)s::text || ' is missing or terminal (' || count(*) || ')')::int END
FROM u;
