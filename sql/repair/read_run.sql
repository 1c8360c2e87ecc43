-- read_run: lock_run without the lock, for dry runs (a READ ONLY transaction may not lock).
-- error_code, attributes, encryption_public_key (beta.29 on) are read by name from the row's
-- jsonb form: NULL on a 4.x world, which has no such columns.
-- params: run_id
SELECT r.id, r.status, r.name, r.deployment_id, r.spec_version, r.input_cbor,
       r.execution_context_cbor, r.output_cbor, r.error_cbor,
       to_jsonb(r) ->> 'error_code' AS error_code,
       to_jsonb(r) -> 'attributes' AS attributes,
       to_jsonb(r) ->> 'encryption_public_key' AS encryption_public_key,
       r.created_at
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
