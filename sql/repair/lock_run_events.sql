-- lock_run_events: every event of the run, in log (id) order, locked FOR UPDATE: the input of a
-- slot-log rewrite (renumbering). With the run row already locked, no other rewrite or
-- UPDATE can touch these rows until commit; a concurrent INSERT is caught by the rewrite's
-- final check (repair/read_run_events) or by the (run_id, id) key.
-- params: run_id
SELECT id, type, created_at
FROM workflow.workflow_events
WHERE run_id = %(run_id)s
ORDER BY id
FOR UPDATE;
