-- complete_wait_row: a copied wait whose wait_completed is in the copied prefix.
-- params: wait_id
UPDATE workflow.workflow_waits
SET status = 'completed', completed_at = now() AT TIME ZONE 'UTC',
    updated_at = now() AT TIME ZONE 'UTC'
WHERE wait_id = %(wait_id)s;
