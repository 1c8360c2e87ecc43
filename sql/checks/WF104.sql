-- WF104 rows a finished run still holds (upstream rule run.resources-released): a hook row or
-- a wait row of a completed / failed / cancelled run.
-- beta.29 ends a run in separate autocommits: UPDATE the run, then DELETE its hooks and its
-- waits, then insert the terminal event (reference §3.4); a crash between them, or a
-- hook_created whose row insert lands after the run's end (it checked the run before), leaves
-- rows behind. A leftover hook row keeps its token reserved: every later run creating that
-- token gets hook_conflict, and a resume by token finds a run that is over. Slot-era hooks
-- retained on purpose (token_retention_until in the future, vw#3276) are not reported; the
-- column is read through to_jsonb so one file serves both eras.
-- Scope: terminal runs, in every scope (a stuck token hurts live runs); --run / --since narrow it.
-- Age: the run's completed_at (JS clock) as an instant,
-- to_timestamp(extract(epoch FROM x)): right for `timestamp` (UTC wall time) and `timestamptz`.
-- params: run_ids, since, min_age.
-- Performance: driven from the hooks and waits tables (rows of live runs only, plus the
-- leftovers), each joined to its run by primary key; never a scan of the runs.
WITH leftovers AS (
    SELECT r.id AS run_id, h.hook_id AS entity_id,
           coalesce(r.completed_at, r.updated_at) AS ended_at, r.status, r.created_at,
           format('hook row (token %%s)', left(h.token, 12) || '...') AS what
    FROM workflow.workflow_hooks h
    JOIN workflow.workflow_runs r ON r.id = h.run_id
    WHERE r.status IN ('completed', 'failed', 'cancelled')
      AND coalesce((to_jsonb(h) ->> 'token_retention_until')::timestamptz, '-infinity') <= now()
    UNION ALL
    SELECT r.id, substring(w.wait_id FROM length(r.id) + 2),
           coalesce(r.completed_at, r.updated_at), r.status, r.created_at,
           format('wait row (%%s)', w.status)
    FROM workflow.workflow_waits w
    JOIN workflow.workflow_runs r ON r.id = w.run_id
    WHERE r.status IN ('completed', 'failed', 'cancelled')
)
SELECT l.run_id,
       l.entity_id,
       to_timestamp(extract(epoch FROM l.ended_at)) AS observed_at,
       to_timestamp(extract(epoch FROM l.ended_at)) >= now() - %(min_age)s::interval AS in_flight,
       format('%%s outlived the %%s run', l.what, l.status) AS detail
FROM leftovers l
WHERE (%(run_ids)s::text[] IS NULL OR l.run_id = ANY (%(run_ids)s::text[]))
  AND (%(since)s::interval IS NULL OR l.created_at >= localtimestamp - %(since)s::interval)
ORDER BY l.ended_at;
