-- unseen_events_windowed: unseen_events for a world without a (run_id, id) index (the
-- beta.29 shape); third statement of every runtime transaction, right after guard_run took
-- the run row lock: raises (`wfctl guard: unseen event`) when the run holds an event newer
-- than the newest one the executor has fed, e.g. a hook payload or a cancellation written by
-- another process. The executor then feeds it and rebuilds the transaction, so the order in
-- which the workflow saw events is the log's order (what a replay will see).
--
-- Cost: a beta.29-shape world indexes events by (id) and by (run_id) only, not (run_id, id),
-- and `run_id = $1 AND id > $2` was planned as a scan of ALL the run's events (on the run_id
-- index, filtering id): it grew with every step (0.9 ms at 3,000 events). So the events after
-- `floor` are read in id order from the primary key, at most 64 of them (in steady state the
-- few written since this run's previous transaction, by any run); only when that window is
-- full (a run resumed after a long pause in a busy world) is the run's own list scanned.
-- Slot-era worlds have the (run_id, id) index (and no index on id alone: there this form
-- would be a sequential scan) and use unseen_events.
-- params: run_id, floor
WITH next AS MATERIALIZED (
    SELECT e.id, e.run_id
    FROM workflow.workflow_events e
    WHERE e.id > %(floor)s
    ORDER BY e.id
    LIMIT 64)
SELECT ('wfctl guard: unseen event ' || coalesce(
            (SELECT min(n.id) FROM next n WHERE n.run_id = %(run_id)s),
            (SELECT min(e.id) FROM workflow.workflow_events e
             WHERE e.run_id = %(run_id)s AND e.id > %(floor)s)))::int
WHERE EXISTS (SELECT 1 FROM next n WHERE n.run_id = %(run_id)s)
   OR ((SELECT count(*) FROM next) = 64
       AND EXISTS (SELECT 1 FROM workflow.workflow_events e
                   WHERE e.run_id = %(run_id)s AND e.id > %(floor)s));
