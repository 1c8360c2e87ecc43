-- read_run: one run with its payload columns; `marked` says whether it numbers events by slot.
-- params: run_id, slots (boolean: does the world have workflow_event_slots)
-- error_code / attributes (beta.29 on) are read from the row's jsonb form: NULL on a 4.x world.
SELECT r.id, r.status::text AS status, r.name, r.deployment_id, r.spec_version,
       r.input_cbor, r.output_cbor, r.error_cbor,
       to_jsonb(r) ->> 'error_code' AS error_code, to_jsonb(r) -> 'attributes' AS attributes,
       r.created_at, r.started_at, r.completed_at
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
