-- wfctl_worker_workflows: the workflow names each live worker serves (alembic revision
-- w0005, both eras), so `wfctl worker status` can show ready runs no live worker would take.
-- NULL: a worker of an earlier wfctl that did not record them (it may serve anything).
ALTER TABLE wfctl.workers ADD COLUMN workflows text[];
