-- inflight_fail_step_jobs: retire a carried run's 4.x `<prefix>steps` jobs (their body names the
-- step by its old id, and the target runtime serves no steps task) with graphile-worker's own
-- admin function, which skips jobs locked within the last 4 hours. The row stays, failed,
-- with the message saying where its work went.
-- params: job_ids (bigint[]), message
SELECT id FROM graphile_worker.permanently_fail_jobs(%(job_ids)s::bigint[], %(message)s);
