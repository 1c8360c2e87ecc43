-- unseen_events: second statement of every runtime transaction, right after guard_run took
-- the run row lock: raises (`wfctl guard: unseen event`) when the run holds an event newer
-- than the newest one the executor has fed, e.g. a hook payload or a cancellation written by
-- another process. The executor then feeds it and rebuilds the transaction, so the order in
-- which the workflow saw events is the log's order (what a replay will see).
-- params: run_id, floor
SELECT ('wfctl guard: unseen event ' || e.id)::int
FROM workflow.workflow_events e
WHERE e.run_id = %(run_id)s AND e.id > %(floor)s
LIMIT 1;
