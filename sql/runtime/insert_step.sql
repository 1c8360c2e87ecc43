-- insert_step: a new step, created and started in one transaction (the package's lazy start:
-- row pending -> running, attempt 1, step_created + step_started events alongside).
-- A second creation raises unique_violation (workflow_steps_pkey).
-- params: run_id, step_id, step_name, input_cbor, spec_version
INSERT INTO workflow.workflow_steps
    (run_id, step_id, step_name, status, attempt, started_at, input_cbor, spec_version)
VALUES (%(run_id)s, %(step_id)s, %(step_name)s, 'running', 1, now() AT TIME ZONE 'UTC',
        %(input_cbor)s, %(spec_version)s);
