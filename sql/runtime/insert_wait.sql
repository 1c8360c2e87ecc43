-- insert_wait: wait_created's row, keyed run_id || '-' || correlation id (reference §2).
-- A second creation raises unique_violation (workflow_waits_pkey).
-- params: wait_id, run_id, resume_at (UTC, naive), spec_version
INSERT INTO workflow.workflow_waits (wait_id, run_id, status, resume_at, spec_version)
VALUES (%(wait_id)s, %(run_id)s, 'waiting', %(resume_at)s, %(spec_version)s);
