-- restore_wait_row: the row of a wait that was open when its run failed (the failure deleted
-- it), rebuilt from its wait_created event, for the revival (--allow-revive): without it the
-- revived run's wait_completed finds no row ("missing"). resume_at is the event's resumeAt
-- (UTC wall clock, as the package writes it).
-- params: run_id, correlation_id, resume_at, spec_version
INSERT INTO workflow.workflow_waits (wait_id, run_id, status, resume_at, spec_version)
VALUES (%(run_id)s || '-' || %(correlation_id)s, %(run_id)s, 'waiting', %(resume_at)s,
        %(spec_version)s)
ON CONFLICT DO NOTHING
RETURNING wait_id;
