-- copy_run: the fork's run row, a copy of the source's creation columns (workflow, deployment,
-- input, execution context, spec version) as a new pending run. Its attributes are those of
-- the fork's own run_created (the source's creation attributes and wfctl.forkedFrom naming
-- the source), not the source row's later ones: a run's attributes are the fold of its log
-- (WF149). Outputs, errors and times are not copied.
-- params: run_id (new), source_id, attributes (json text)
INSERT INTO workflow.workflow_runs
    (id, deployment_id, status, name, input_cbor, execution_context_cbor, input,
     execution_context, spec_version, attributes, encryption_public_key)
SELECT %(run_id)s, r.deployment_id, 'pending', r.name, r.input_cbor, r.execution_context_cbor,
       r.input, r.execution_context, r.spec_version,
       %(attributes)s::jsonb, r.encryption_public_key
FROM workflow.workflow_runs r
WHERE r.id = %(source_id)s
RETURNING id, name, deployment_id;
