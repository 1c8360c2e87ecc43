-- create_event_slots: the slot era's marker table (reference §1.4): a row means "this run
-- numbers its events by slot". A new table: no lock on any existing one.
CREATE TABLE IF NOT EXISTS workflow.workflow_event_slots (
    run_id varchar NOT NULL,
    CONSTRAINT workflow_event_slots_pkey PRIMARY KEY (run_id)
);
