-- run_attributes: a run's attributes (jsonb), read after the caller locked the row.
-- params: run_id
SELECT attributes FROM workflow.workflow_runs WHERE id = %(run_id)s;
