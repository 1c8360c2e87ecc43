-- insert_slot_marker_seq: insert_slot_marker for a marker table with `seq_in_band` (0026).
-- A marker wfctl creates restores a creation that never completed, so it carries what the
-- package's creation writes: seq_in_band 1 (no in-band write has been fenced yet). Written
-- explicitly rather than left to the column default, so the value does not depend on how a
-- migration variant declared the default. An existing marker is never touched.
-- params: run_id
INSERT INTO workflow.workflow_event_slots (run_id, seq_in_band) VALUES (%(run_id)s, 1)
ON CONFLICT DO NOTHING;
