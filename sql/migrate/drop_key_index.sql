-- drop_key_index: remove an INVALID leftover of a failed concurrent build, without blocking
-- reads or writes (SHARE UPDATE EXCLUSIVE). Outside any transaction block.
DROP INDEX CONCURRENTLY IF EXISTS workflow.workflow_events_run_id_id_idx;
