-- lock_hook: the hook row, locked FOR UPDATE against hook_disposed's DELETE.
-- params: run_id, hook_id
SELECT hook_id, token, is_webhook, is_system, metadata_cbor, spec_version
FROM workflow.workflow_hooks
WHERE run_id = %(run_id)s AND hook_id = %(hook_id)s
FOR UPDATE;
