-- live_runs: the runs whose rows and events the world may still change, kept so the next pass
-- can find them without scanning every run ever made: the runs pending or running at this
-- pass (status index); ended runs that still have a pending or running step (steps' status
-- index): the package lets such a step complete, fail or retry after its run ended
-- (step_completed / _failed / _retrying skip the run check), and a running step may start
-- again; runs of a legacy spec (NULL or <= 1), whose wait_completed / hook_received the
-- package stores without a run check: found by one scan of the runs at a full pass (`full`),
-- then carried from pass to pass by key (`carry`: the last list and this pass's touched runs,
-- which include every run created since).
-- params: full (boolean), carry (text[])
SELECT r.id FROM workflow.workflow_runs r WHERE r.status IN ('pending', 'running')
UNION
SELECT s.run_id FROM workflow.workflow_steps s WHERE s.status IN ('pending', 'running')
UNION
SELECT r.id FROM workflow.workflow_runs r
WHERE (%(full)s OR r.id = ANY (%(carry)s::text[]))
  AND (r.spec_version IS NULL
       OR (r.spec_version ~ '^[0-9]{1,9}$' AND r.spec_version::int <= 1));
