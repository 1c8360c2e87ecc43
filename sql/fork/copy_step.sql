-- copy_step: a copied step's row under the fork's run and correlation id: the state it had
-- in the source (a step copied into a fork is always terminal in the copied prefix).
-- params: run_id (new), step_id (new), source_step_id
INSERT INTO workflow.workflow_steps
    (run_id, step_id, step_name, status, input, output, error, attempt, started_at,
     completed_at, retry_after, input_cbor, output_cbor, error_cbor, spec_version)
SELECT %(run_id)s, %(step_id)s, s.step_name, s.status, s.input, s.output, s.error, s.attempt,
       s.started_at, s.completed_at, NULL, s.input_cbor, s.output_cbor, s.error_cbor,
       s.spec_version
FROM workflow.workflow_steps s
WHERE s.step_id = %(source_step_id)s
RETURNING step_id;
