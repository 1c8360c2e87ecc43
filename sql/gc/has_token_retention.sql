-- has_token_retention: does workflow_hooks carry token_retention_until (slot era, 0018)?
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_attribute
    WHERE attrelid = to_regclass('workflow.workflow_hooks')
      AND attname = 'token_retention_until' AND NOT attisdropped
) AS present;
