-- claim: take one ready run of a queue whose workflow this worker can run, and lease it.
-- Ready = no lease and ready_at due. FOR UPDATE SKIP LOCKED: concurrent claimers never wait
-- on each other nor take the same row. A run under a per-workflow limit is taken only while
-- fewer than its limit of runs of that workflow hold a live lease (claims then run under
-- claim_lock). A live lease is never touched: only recovery clears expired ones.
-- params: worker, queue, names (text[]), lease (seconds), limited (text[]), limits (int[])
WITH candidate AS (
    SELECT q.run_id
    FROM wfctl.run_queue q
    WHERE q.queue = %(queue)s
      AND q.lease_owner IS NULL
      AND q.ready_at <= now()
      AND q.workflow_name = ANY(%(names)s::text[])
      AND (
          q.workflow_name <> ALL(%(limited)s::text[])
          OR (SELECT count(*) FROM wfctl.run_queue h
              WHERE h.workflow_name = q.workflow_name AND h.lease_owner IS NOT NULL)
             < (SELECT l.n FROM unnest(%(limited)s::text[], %(limits)s::int[]) AS l(name, n)
                WHERE l.name = q.workflow_name LIMIT 1)
      )
    ORDER BY q.ready_at, q.run_id
    LIMIT 1
    FOR UPDATE OF q SKIP LOCKED
)
UPDATE wfctl.run_queue r
SET lease_owner = %(worker)s,
    lease_until = now() + make_interval(secs => %(lease)s),
    claims = r.claims + 1,
    claimed_at = now()
FROM candidate c
WHERE r.run_id = c.run_id
RETURNING r.run_id, r.workflow_name, r.wake_seq, r.claims;
