-- run_exists: whether a run id exists (a `runs list --after` cursor must name one).
SELECT EXISTS (SELECT 1 FROM workflow.workflow_runs WHERE id = %(run_id)s::text);
