-- WF144 one hook token owned by several live runs (upstream rule hook.token-unique; vw#4173).
-- beta.29's hook_created reads the hook by token, then inserts the row in a later autocommit,
-- and workflow_hooks.token has no unique index (reference §3.4): concurrent creations of one
-- token all succeed (upstream saw 12 rows, 12 owners, 0 hook_conflict). A resume by token
-- then goes to whichever row the lookup returns: external payloads reach the wrong run.
-- One finding per hook row of an in-scope run whose token another live run's row also holds.
-- Live: the owning run is pending or running (rows of terminal runs are WF104's business;
-- slot-era retained hooks of terminal runs do not own a token for a live run here).
-- Repair: an operator's choice (which run keeps the token); never automatic.
-- Age: the newest row of the token (DB default created_at) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
WITH live AS (
    SELECT h.hook_id, h.run_id, h.token, h.created_at
    FROM workflow.workflow_hooks h
    JOIN workflow.workflow_runs r ON r.id = h.run_id
    WHERE r.status IN ('pending', 'running')
),
shared AS (
    SELECT token, count(DISTINCT run_id) AS runs, max(created_at) AS newest,
           string_agg(DISTINCT run_id, ', ') AS owners
    FROM live
    GROUP BY token
    HAVING count(DISTINCT run_id) > 1
)
SELECT l.run_id,
       l.hook_id AS entity_id,
       s.newest::timestamptz AS observed_at,
       s.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('token %%s is held by %%s live runs: %%s', left(l.token, 12) || '...', s.runs,
              s.owners) AS detail
FROM shared s
JOIN live l ON l.token = s.token
JOIN workflow.workflow_runs r ON r.id = l.run_id
WHERE (%(run_ids)s::text[] IS NULL OR l.run_id = ANY (%(run_ids)s::text[]))
  AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
ORDER BY s.newest, l.run_id;
