-- complete_step_check: raises (`wfctl guard: step ... is missing or terminal`) unless the CTE
-- `u` (complete_step_row's UPDATE) changed exactly one row; else one row, ok = 1. A fragment,
-- included after `WITH u AS (...)` by complete_step.sql and commit_step.sql. The cast depends
-- on the row count, so the planner cannot fold it into an error at plan time.
-- params: step_id
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: step ' || %(step_id)s::text || ' is missing or terminal (' || count(*) || ')')::int END AS ok
FROM u
