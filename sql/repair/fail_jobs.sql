-- fail_jobs: stop surplus wake-up jobs with graphile-worker's own admin function, which skips
-- jobs locked within the last 4 hours: a running delivery is never touched.
-- params: job_ids (bigint[]), message
SELECT id FROM graphile_worker.permanently_fail_jobs(%(job_ids)s::bigint[], %(message)s);
