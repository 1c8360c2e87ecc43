-- retry_step: step_retrying's row change (back to pending, error, retry_after), guarded.
-- params: step_id, error_cbor, retry_after (UTC, naive)
WITH u AS (
    UPDATE workflow.workflow_steps
    SET status = 'pending', error_cbor = %(error_cbor)s, retry_after = %(retry_after)s,
        updated_at = now() AT TIME ZONE 'UTC'
    WHERE step_id = %(step_id)s AND status NOT IN ('completed', 'failed', 'cancelled')
    RETURNING step_id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: step ' || %(step_id)s::text || ' is missing or terminal (' || count(*) || ')')::int END
FROM u;
