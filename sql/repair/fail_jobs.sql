-- fail_jobs: stop jobs with graphile-worker's own admin function, which skips jobs locked
-- within the last 4 hours: a running delivery is never touched. The row stays, failed, with
-- the message. Used for surplus wake-up jobs (repair) and a carried run's 4.x steps jobs
-- (migrate --carry: their bodies name steps by their old ids).
-- params: job_ids (bigint[]), message
SELECT id FROM graphile_worker.permanently_fail_jobs(%(job_ids)s::bigint[], %(message)s);
