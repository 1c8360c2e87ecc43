-- redrive_jobs: give a dead-lettered run's spent jobs their deliveries back, with
-- graphile-worker's own admin function: attempts back to 0, due now, payload and job key
-- untouched (a step dispatch stays a step dispatch). reschedule_jobs skips jobs locked
-- within the last 4 hours, so the caller compares the ids it got back.
-- params: job_ids (bigint[])
SELECT id FROM graphile_worker.reschedule_jobs(
    %(job_ids)s::bigint[], run_at => now(), attempts => 0
);
