-- delete_slot_markers: slot era only: the batch's rows in workflow_event_slots (the marker
-- saying "this run numbers its events by slot"), after its events, before its run rows.
-- params: run_ids (text[])
WITH d AS (
    DELETE FROM workflow.workflow_event_slots WHERE run_id = ANY (%(run_ids)s::text[])
    RETURNING 1
)
SELECT count(*) FROM d;
