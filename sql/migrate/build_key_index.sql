-- build_key_index: the new key's unique index, built without blocking reads or writes
-- (SHARE UPDATE EXCLUSIVE). Must run outside any transaction block. A failure or cancel
-- leaves an INVALID index behind, which `drop_key_index` removes before a rebuild. The
-- package's shipped 0019 adopts a valid index of exactly this name.
CREATE UNIQUE INDEX CONCURRENTLY workflow_events_run_id_id_idx
    ON workflow.workflow_events USING btree (run_id, id);
