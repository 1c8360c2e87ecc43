-- finished_runs: finished runs (completed or failed) of the given workflow names created
-- since a time, newest first: what `wfctl runs replay --all-finished` replays.
-- params: names (text[]), since (timestamp, session wall clock, or NULL), limit
SELECT id
FROM workflow.workflow_runs
WHERE name = ANY(%(names)s::text[])
  AND status::text IN ('completed', 'failed')
  AND (%(since)s::timestamp IS NULL OR created_at >= %(since)s::timestamp)
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;
