-- delete_run_hooks: a terminal run keeps no hook rows (beta.29 shape).
-- params: run_id
DELETE FROM workflow.workflow_hooks WHERE run_id = %(run_id)s;
