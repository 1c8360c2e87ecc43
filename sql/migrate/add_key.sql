-- add_key: the new key on a table that has no primary key at all (the old one was dropped by
-- hand): ACCESS EXCLUSIVE on workflow_events for catalog work only, adopting the prebuilt
-- valid index. Run under a short lock_timeout.
ALTER TABLE workflow.workflow_events
    ADD CONSTRAINT workflow_events_run_id_id_pk PRIMARY KEY USING INDEX workflow_events_run_id_id_idx;
