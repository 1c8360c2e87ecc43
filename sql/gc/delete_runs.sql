-- delete_runs: last statement of a gc batch, the run rows (locked by lock_batch; their
-- events and entities are already gone in this transaction).
-- params: run_ids (text[])
WITH d AS (
    DELETE FROM workflow.workflow_runs WHERE id = ANY (%(run_ids)s::text[]) RETURNING 1
)
SELECT count(*) FROM d;
