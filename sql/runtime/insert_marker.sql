-- insert_marker: the slot marker of a new run ("this run numbers its events by slot"),
-- in the run's creation transaction (the invariant of #3656). Slot-era worlds only.
-- params: run_id
INSERT INTO workflow.workflow_event_slots (run_id) VALUES (%(run_id)s);
