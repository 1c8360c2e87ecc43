-- read_run: one run with its payload columns; `marked` says whether it numbers events by slot.
-- params: run_id, slots (boolean: does the world have workflow_event_slots)
SELECT r.id, r.status::text AS status, r.name, r.deployment_id, r.spec_version,
       r.input_cbor, r.output_cbor, r.error_cbor, r.error_code, r.attributes,
       r.created_at, r.started_at, r.completed_at
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
