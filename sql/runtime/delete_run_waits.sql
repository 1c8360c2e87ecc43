-- delete_run_waits: a terminal run keeps no wait rows (reference §3.4).
-- params: run_id
DELETE FROM workflow.workflow_waits WHERE run_id = %(run_id)s;
