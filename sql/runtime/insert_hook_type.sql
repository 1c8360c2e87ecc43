-- insert_hook_type: a typed hook's payload type (`module:qualname`), in the transaction that
-- creates the hook, so `resume_hook` can validate a payload before writing it.
-- params: run_id, hook_id, type_ref
INSERT INTO wfctl.hook_types (run_id, hook_id, type_ref)
VALUES (%(run_id)s, %(hook_id)s, %(type_ref)s)
ON CONFLICT (run_id, hook_id) DO NOTHING;
