-- delete_hook_types: a run's end forgets its typed hooks' payload types (with its hook rows).
-- params: run_id
DELETE FROM wfctl.hook_types WHERE run_id = %(run_id)s;
