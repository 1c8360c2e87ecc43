-- drop_run_id_index: the (run_id) index is redundant once the key leads with run_id. Dropped
-- without blocking reads or writes (SHARE UPDATE EXCLUSIVE); outside any transaction block.
DROP INDEX CONCURRENTLY IF EXISTS workflow.workflow_events_run_id_index;
