-- retained_hooks: runs among the batch that still own a hook whose token retention has not
-- ended (slot-era column token_retention_until, timestamptz). The row keeps the token taken
-- so a new hook cannot claim it; gc keeps the whole run until the retention ends.
-- Only run where the column exists (has_token_retention).
-- params: run_ids (text[])
SELECT DISTINCT h.run_id
FROM workflow.workflow_hooks h
WHERE h.run_id = ANY (%(run_ids)s::text[])
  AND h.token_retention_until > now();
