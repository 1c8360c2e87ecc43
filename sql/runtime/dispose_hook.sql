-- dispose_hook: hook_disposed's row change (the row is deleted), guarded: raises if missing.
-- params: hook_id
WITH d AS (DELETE FROM workflow.workflow_hooks WHERE hook_id = %(hook_id)s RETURNING hook_id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: hook ' || %(hook_id)s::text || ' is missing (' || count(*) || ')')::int END
FROM d;
