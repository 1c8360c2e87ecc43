-- active_runs: pending/running runs of the given workflow names (workers pick them up).
-- params: names (text[])
SELECT id, name FROM workflow.workflow_runs
WHERE status IN ('pending', 'running') AND name = ANY(%(names)s::text[])
ORDER BY created_at;
