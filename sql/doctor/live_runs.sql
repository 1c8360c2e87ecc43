-- live_runs: the runs pending or running at this pass (through the status index), kept so the
-- next pass can find a run row changed since without scanning every run ever made.
SELECT r.id FROM workflow.workflow_runs r WHERE r.status IN ('pending', 'running');
