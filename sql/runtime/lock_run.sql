-- lock_run: an external writer's first statement (cancel, hook resume): the run row FOR
-- UPDATE, so it serialises with the runtime's transitions (which hold FOR KEY SHARE).
-- params: run_id
SELECT id, status::text AS status, name, spec_version FROM workflow.workflow_runs
WHERE id = %(run_id)s FOR UPDATE;
