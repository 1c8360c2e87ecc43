-- read_hook: lock_hook without the lock, for dry runs.
-- params: run_id, hook_id
SELECT hook_id, token, is_webhook, is_system, metadata_cbor, spec_version
FROM workflow.workflow_hooks
WHERE run_id = %(run_id)s AND hook_id = %(hook_id)s;
