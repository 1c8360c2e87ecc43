-- guard_run: first statement of every runtime transition. Locks the run row FOR KEY SHARE
-- (an external writer -- `wfctl runs cancel`, `wfctl hooks resume` -- takes FOR UPDATE, so
-- the two serialise and event ids follow commit order) and raises unless the run is still
-- pending or running (reference §3.4: no entity may start on a terminal run). The error arm
-- depends on a column so the planner cannot fold it; its message starts with `wfctl guard`.
-- `now` is the transaction's timestamp as the event and entity `created_at` defaults store
-- it (timestamp without time zone, in the session's TimeZone): the executor stamps the
-- events it feeds to the workflow before they are sent (docs/runtime.md, Transactions).
-- params: run_id
SELECT CASE WHEN r.status IN ('pending', 'running') THEN 1
            ELSE ('wfctl guard: run ' || r.id || ' is ' || r.status::text)::int END AS ok,
       now()::timestamp AS now
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s
FOR KEY SHARE;
