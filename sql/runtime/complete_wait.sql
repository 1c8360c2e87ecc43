-- complete_wait: wait_completed's row change, guarded: raises unless the wait is waiting.
-- params: wait_id
WITH u AS (
    UPDATE workflow.workflow_waits
    SET status = 'completed', completed_at = now() AT TIME ZONE 'UTC',
        updated_at = now() AT TIME ZONE 'UTC'
    WHERE wait_id = %(wait_id)s AND status = 'waiting'
    RETURNING wait_id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: wait ' || %(wait_id)s::text || ' is missing or completed (' || count(*) || ')')::int END
FROM u;
