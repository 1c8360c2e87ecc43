-- plan_retained: how many candidate runs a gc with this cutoff would keep for now because a
-- hook of theirs still holds its token (token_retention_until in the future; dry run, and
-- only where the column exists). Same candidate predicate as candidates.sql.
-- params: cutoff (timestamp)
SELECT count(DISTINCT h.run_id)
FROM workflow.workflow_hooks h
JOIN workflow.workflow_runs r ON r.id = h.run_id
WHERE h.token_retention_until > now()
  AND r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp;
