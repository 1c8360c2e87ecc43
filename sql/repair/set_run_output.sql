-- set_run_output: WF154's repair, a completed run's missing output copied from its
-- run_completed event (re-encoded bytes, as the package reads them back). Guarded: only a
-- completed run whose row still has no output at all.
-- params: run_id, output (bytea)
UPDATE workflow.workflow_runs
SET output_cbor = %(output)s
WHERE id = %(run_id)s AND status = 'completed' AND output_cbor IS NULL AND output IS NULL
RETURNING id;
