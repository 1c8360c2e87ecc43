-- inflight_ids_in_payloads: where a run's correlation ids (their ULID bodies) also occur inside
-- a payload of the run (event payloads, step input/output, hook metadata, run input/output/
-- context). A rewrite of the id columns would leave those copies behind, so a carry refuses
-- such a run. Reads the run's rows by run_id (indexed); bytes searched as bytes.
-- params: run_id, bodies (text[])
SELECT src, count(*)::int AS hits
FROM (
    SELECT 'workflow_events' AS src, coalesce(e.payload_cbor, '') || convert_to(coalesce(e.payload::text, ''), 'UTF8') AS blob
    FROM workflow.workflow_events e WHERE e.run_id = %(run_id)s
    UNION ALL
    SELECT 'workflow_steps', coalesce(s.input_cbor, '') || coalesce(s.output_cbor, '') || coalesce(s.error_cbor, '')
           || convert_to(coalesce(s.input::text, '') || coalesce(s.output::text, ''), 'UTF8')
    FROM workflow.workflow_steps s WHERE s.run_id = %(run_id)s
    UNION ALL
    SELECT 'workflow_hooks', coalesce(h.metadata_cbor, '') || convert_to(coalesce(h.metadata::text, ''), 'UTF8')
    FROM workflow.workflow_hooks h WHERE h.run_id = %(run_id)s
    UNION ALL
    SELECT 'workflow_runs', coalesce(r.input_cbor, '') || coalesce(r.output_cbor, '') || coalesce(r.execution_context_cbor, '')
           || convert_to(coalesce(r.input::text, '') || coalesce(r.execution_context::text, ''), 'UTF8')
    FROM workflow.workflow_runs r WHERE r.id = %(run_id)s
) b
CROSS JOIN unnest(%(bodies)s::text[]) AS body
WHERE position(convert_to(body, 'UTF8') IN b.blob) > 0
GROUP BY src
ORDER BY src;
