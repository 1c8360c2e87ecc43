-- runs_by_status: how many runs the world holds in each status (every runtime's runs, Node
-- and Python), for the worker's /metrics. One scan of the status index per scrape.
SELECT status::text AS status, count(*) AS runs
FROM workflow.workflow_runs
GROUP BY status
ORDER BY status;
