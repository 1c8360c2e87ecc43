-- guard_run: first statement of every runtime transition. Locks the run row FOR KEY SHARE
-- (an external writer -- `wfctl runs cancel`, `wfctl hooks resume` -- takes FOR UPDATE, so
-- the two serialise and event ids follow commit order) and raises unless the run is still
-- pending or running (reference §3.4: no entity may start on a terminal run). The error arm
-- depends on a column so the planner cannot fold it; its message starts with `wfctl guard`.
-- `now` is the transaction's timestamp as the event and entity `created_at` defaults store
-- it (timestamp without time zone, in the session's TimeZone): the executor stamps the
-- events it feeds to the workflow before they are sent (docs/runtime.md, Transactions).
-- `seqscan_off` (beta.29-shaped worlds) turns enable_seqscan off for the rest of the
-- transaction, as `SET LOCAL enable_seqscan = off` did as a statement of its own (one
-- statement fewer per step): the statements that follow are planned after this one ran.
-- It also makes the statements that follow use their generic plans
-- (`plan_cache_mode = force_generic_plan`, for the rest of the transaction): they are the
-- same few index lookups and inserts at every step, and a custom plan re-planned at every
-- Bind cost ~0.05 ms of server CPU per step. A generic plan is made once per session and
-- kept; with `seqscan_off` (which the store passes in both eras) it is made with
-- enable_seqscan off, so a plan made while a young world's tables were tiny is not a
-- sequential scan that then stays.
-- params: run_id, seqscan_off (boolean)
SELECT CASE WHEN r.status IN ('pending', 'running') THEN 1
            ELSE ('wfctl guard: run ' || r.id || ' is ' || r.status::text)::int END AS ok,
       now()::timestamp AS now,
       CASE WHEN %(seqscan_off)s::boolean
            THEN set_config('enable_seqscan', 'off', true) END AS seqscan,
       set_config('plan_cache_mode', 'force_generic_plan', true) AS plans
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s
FOR KEY SHARE;
