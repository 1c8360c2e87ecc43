-- delete_events: first statement of a gc batch. The log goes before anything else, the run
-- row last: a run row without its events is just an empty run, while events without their
-- run row are an orphan log that a reused run id would replay as its own past.
-- params: run_ids (text[])
WITH d AS (
    DELETE FROM workflow.workflow_events WHERE run_id = ANY (%(run_ids)s::text[]) RETURNING 1
)
SELECT count(*) FROM d;
