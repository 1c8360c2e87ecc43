-- insert_run: the run row of run_created (status pending; spec_version is varchar in the
-- database, reference §1.3). Same transaction as the slot marker and run_created at slot 1.
-- A taken id raises unique_violation (workflow_runs_pkey): the caller reports it.
-- params: run_id, deployment_id, name, input_cbor, execution_context_cbor, spec_version, attributes
INSERT INTO workflow.workflow_runs
    (id, deployment_id, status, name, input_cbor, execution_context_cbor, spec_version, attributes)
VALUES (%(run_id)s, %(deployment_id)s, 'pending', %(name)s, %(input_cbor)s,
        %(execution_context_cbor)s, %(spec_version)s::text, %(attributes)s::jsonb);
