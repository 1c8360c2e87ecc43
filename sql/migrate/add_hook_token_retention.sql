-- add_hook_token_retention: migration 0018's effect (reference §1.4). A nullable column
-- without a default: ACCESS EXCLUSIVE on workflow_hooks for a catalog change only, no rewrite.
ALTER TABLE workflow.workflow_hooks
    ADD COLUMN IF NOT EXISTS token_retention_until timestamp with time zone;
