-- swap_key: the one-statement key swap. ACCESS EXCLUSIVE on workflow_events, for catalog work
-- only: the new key adopts the prebuilt valid index (which Postgres renames to the constraint's
-- name) and dropping the old key's index is a catalog change. Run under a short lock_timeout.
ALTER TABLE workflow.workflow_events
    DROP CONSTRAINT workflow_events_pkey,
    ADD CONSTRAINT workflow_events_run_id_id_pk PRIMARY KEY USING INDEX workflow_events_run_id_id_idx;
