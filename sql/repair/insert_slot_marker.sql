-- insert_slot_marker: mark a run as slot-numbered (slot era), as the fixed world does in the
-- same transaction as the run row and its slot-1 run_created.
-- params: run_id
INSERT INTO workflow.workflow_event_slots (run_id) VALUES (%(run_id)s) ON CONFLICT DO NOTHING;
