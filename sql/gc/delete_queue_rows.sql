-- delete_queue_rows: the Python worker's queue rows for the batch's runs (a terminal run
-- has none unless its end was torn; where wfctl.run_queue exists).
-- params: run_ids (text[])
WITH d AS (
    DELETE FROM wfctl.run_queue WHERE run_id = ANY (%(run_ids)s::text[]) RETURNING 1
)
SELECT count(*) FROM d;
