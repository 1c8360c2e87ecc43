-- insert_hook: hook_created's row (owner/project/environment '' as the world writes them).
-- Raises (`wfctl guard: hook token`) when another hook holds the token; the caller then
-- records a hook_conflict event instead, as the world does (reference §3.4).
-- params: run_id, hook_id, token, metadata_cbor, spec_version
INSERT INTO workflow.workflow_hooks
    (run_id, hook_id, token, owner_id, project_id, environment, metadata_cbor, spec_version,
     is_webhook, is_system)
SELECT %(run_id)s::varchar, %(hook_id)s::varchar, %(token)s::varchar, '', '', '',
       %(metadata_cbor)s::bytea, %(spec_version)s::int,
       false, false
WHERE coalesce((
        SELECT ('wfctl guard: hook token held by run ' || h.run_id)::int
        FROM workflow.workflow_hooks h
        WHERE h.token = %(token)s::varchar
        LIMIT 1), 1) = 1;
