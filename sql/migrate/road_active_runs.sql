-- road_active_runs: the runs still in flight (pending or running), oldest first, for the
-- road's plan when the analysis of runs across an upgrade cannot judge the road (no runtime
-- facts for a version): each is listed with an unknown fate and treated as one that could fail.
SELECT r.id AS run_id, r.name AS workflow_name, r.status::text AS status
FROM workflow.workflow_runs r
WHERE r.status IN ('pending', 'running')
ORDER BY r.created_at, r.id
LIMIT 1000;
