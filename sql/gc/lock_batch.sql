-- lock_batch: lock a batch of candidate runs FOR UPDATE and keep only those still terminal
-- and still past the cutoff (the WHERE is re-evaluated on the locked row version). A run
-- another session holds (a repair, a late writer) is skipped, not waited for: it stays a
-- candidate for the next gc.
-- params: run_ids (text[]), cutoff (timestamp)
SELECT r.id
FROM workflow.workflow_runs r
WHERE r.id = ANY (%(run_ids)s::text[])
  AND r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp
ORDER BY r.id
FOR UPDATE SKIP LOCKED;
