-- release_lock: release one job's lock as graphile-worker's own stale-lock sweep does
-- (resetLockedAt in 0.16.6: locked_at/locked_by cleared, run_at = greatest(run_at, now())),
-- and its named queue's lock when the same worker holds it (world-postgres sets no queue name).
-- Re-checked under the job's row lock: the same holder since the same instant, and still
-- selected (older than AGE, or a worker named dead). A lock that moved (the worker finished,
-- or another worker took the job) is left alone: zero rows.
-- params: job_id, locked_by, locked_at, older_than (interval or NULL), workers (text[] or NULL)
WITH target AS (
    SELECT j.id, j.job_queue_id, j.locked_by
    FROM graphile_worker._private_jobs j
    WHERE j.id = %(job_id)s
      AND j.locked_by = %(locked_by)s
      AND j.locked_at = %(locked_at)s
      AND ((%(older_than)s::interval IS NOT NULL
            AND j.locked_at < now() - %(older_than)s::interval)
           OR j.locked_by = ANY (coalesce(%(workers)s::text[], '{}')))
    FOR UPDATE
),
released AS (
    UPDATE graphile_worker._private_jobs j
    SET locked_at = NULL, locked_by = NULL, run_at = greatest(j.run_at, now())
    FROM target t
    WHERE j.id = t.id
    RETURNING j.id
),
queues AS (
    UPDATE graphile_worker._private_job_queues q
    SET locked_at = NULL, locked_by = NULL
    FROM target t
    WHERE q.id = t.job_queue_id AND q.locked_by = t.locked_by
    RETURNING q.id
)
SELECT (SELECT count(*) FROM released) AS jobs, (SELECT count(*) FROM queues) AS queues;
