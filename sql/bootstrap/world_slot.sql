-- world_slot: the slot-era changes on top of world_beta29 (reference §1.4, migrations 0018
-- and 0019 in their shipped form). For an empty or small world only: on a large live table
-- the key swap here builds the index under ACCESS EXCLUSIVE; use `wfctl migrate --online`.

-- 0018: hook token retention (the row may outlive its run until this time).
ALTER TABLE workflow.workflow_hooks ADD COLUMN token_retention_until timestamp with time zone;

-- 0019: events keyed per run; the marker table says "this run numbers its events by slot".
CREATE UNIQUE INDEX workflow_events_run_id_id_idx ON workflow.workflow_events (run_id, id);
ALTER TABLE workflow.workflow_events
    DROP CONSTRAINT workflow_events_pkey,
    ADD CONSTRAINT workflow_events_run_id_id_pk PRIMARY KEY USING INDEX workflow_events_run_id_id_idx;
DROP INDEX workflow.workflow_events_run_id_index;
CREATE TABLE workflow.workflow_event_slots (
    run_id varchar NOT NULL,
    CONSTRAINT workflow_event_slots_pkey PRIMARY KEY (run_id)
);
