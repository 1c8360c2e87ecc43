-- lock_hook: the hook row, locked FOR UPDATE against hook_disposed's DELETE.
-- is_system (beta.29 on) is read from the row's jsonb form: NULL on a 4.x world.
-- params: run_id, hook_id
SELECT h.hook_id, h.token, h.is_webhook, (to_jsonb(h) ->> 'is_system')::boolean AS is_system,
       h.metadata_cbor, h.spec_version
FROM workflow.workflow_hooks h
WHERE h.run_id = %(run_id)s AND h.hook_id = %(hook_id)s
FOR UPDATE;
