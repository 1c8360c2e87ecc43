-- hold: a process that drives a run itself (`wfctl run`, `RunHandle.result()`) leases it as a
-- worker's claim does, so that when that process dies the lease expires, recovery makes the
-- run ready and a `wfctl worker` adopts it (nothing is stranded). Inserts the run's queue
-- row (a run not handed to workers yet), or takes an existing row that is unleased, past its
-- lease, or already ours. A live lease of another owner is left alone: no row returned.
-- params: run_id, queue, name, owner, lease (seconds)
INSERT INTO wfctl.run_queue AS q
    (run_id, queue, workflow_name, lease_owner, lease_until, claims, claimed_at)
VALUES (%(run_id)s, %(queue)s, %(name)s, %(owner)s,
        now() + make_interval(secs => %(lease)s), 1, now())
ON CONFLICT (run_id) DO UPDATE
SET lease_owner = EXCLUDED.lease_owner,
    lease_until = EXCLUDED.lease_until,
    claims = q.claims + 1,
    claimed_at = now()
WHERE q.lease_owner IS NULL OR q.lease_until < now() OR q.lease_owner = EXCLUDED.lease_owner
RETURNING q.wake_seq;
