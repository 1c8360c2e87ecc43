-- run_marker_for_share: does this run number its events by slot? Read inside the writing
-- transaction and locked FOR SHARE (the hardening proposed in #3656): a run whose marker is
-- being created cannot be read as legacy in the same instant. Slot-era worlds only.
-- params: run_id
SELECT run_id FROM workflow.workflow_event_slots WHERE run_id = %(run_id)s FOR SHARE;
