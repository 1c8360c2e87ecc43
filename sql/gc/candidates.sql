-- candidates: terminal runs that completed before the cutoff, oldest completion first. Keyed
-- on completion, never creation: a run created long ago may have finished a minute ago
-- (a 30-day sleep), and its caller may still read its result. A terminal run without
-- completed_at (written before the column, or torn) falls back to its last update.
-- Read once into a WITH HOLD cursor (materialised at once, no snapshot held while the
-- batches run); each batch re-checks its runs under lock (lock_batch).
-- params: cutoff (timestamp, UTC wall time)
SELECT r.id
FROM workflow.workflow_runs r
WHERE r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp
ORDER BY coalesce(r.completed_at, r.updated_at), r.id;
