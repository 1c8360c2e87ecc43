-- delete_entities: the batch's steps, waits, hooks and stream chunks (after its events,
-- before its run rows). Runs with a retained hook token never reach this statement.
-- params: run_ids (text[])
WITH s AS (
    DELETE FROM workflow.workflow_steps WHERE run_id = ANY (%(run_ids)s::text[]) RETURNING 1
), w AS (
    DELETE FROM workflow.workflow_waits WHERE run_id = ANY (%(run_ids)s::text[]) RETURNING 1
), h AS (
    DELETE FROM workflow.workflow_hooks WHERE run_id = ANY (%(run_ids)s::text[]) RETURNING 1
), c AS (
    DELETE FROM workflow.workflow_stream_chunks WHERE run_id = ANY (%(run_ids)s::text[])
    RETURNING 1
)
SELECT (SELECT count(*) FROM s) AS steps, (SELECT count(*) FROM w) AS waits,
       (SELECT count(*) FROM h) AS hooks, (SELECT count(*) FROM c) AS stream_chunks;
