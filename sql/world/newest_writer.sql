-- newest_writer: the execution context the newest run was created with. @workflow/core puts
-- its own version there (executionContext.workflowCoreVersion, written with run_created), so
-- a world whose journal leaves several package versions can say which core wrote it. Run ids
-- are ULIDs: the primary key's last entry is the newest run (one index probe).
SELECT id, execution_context_cbor FROM workflow.workflow_runs ORDER BY id DESC LIMIT 1;
