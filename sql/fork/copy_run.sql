-- copy_run: the fork's run row, a copy of the source's creation columns (workflow, deployment,
-- input, execution context, spec version, attributes) as a new pending run, with the source
-- named in the attribute wfctl.forkedFrom. Outputs, errors and times are not copied.
-- params: run_id (new), source_id
INSERT INTO workflow.workflow_runs
    (id, deployment_id, status, name, input_cbor, execution_context_cbor, input,
     execution_context, spec_version, attributes, encryption_public_key)
SELECT %(run_id)s, r.deployment_id, 'pending', r.name, r.input_cbor, r.execution_context_cbor,
       r.input, r.execution_context, r.spec_version,
       r.attributes || jsonb_build_object('wfctl.forkedFrom', r.id), r.encryption_public_key
FROM workflow.workflow_runs r
WHERE r.id = %(source_id)s
RETURNING id, name, deployment_id;
