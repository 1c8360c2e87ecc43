-- runs_exist: which of the given run ids the world knows, by a run row or by any event (a
-- run whose row is gone but whose log remains is still something doctor can report on).
-- Params: run_ids text[].
SELECT r.id
FROM unnest(%(run_ids)s::text[]) AS r(id)
WHERE EXISTS (SELECT 1 FROM workflow.workflow_runs wr WHERE wr.id = r.id)
   OR EXISTS (SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = r.id);
