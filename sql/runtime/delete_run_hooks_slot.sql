-- delete_run_hooks_slot: slot era: hooks whose token retention has not ended survive the run.
-- params: run_id
DELETE FROM workflow.workflow_hooks
WHERE run_id = %(run_id)s
  AND (token_retention_until IS NULL OR token_retention_until <= now());
