-- page_runs: one page of runs for the Python client's `list()`, newest first, with a keyset
-- cursor: `after` is the id of the last run of the previous page (that run's created_at and id
-- bound this page, so runs created meanwhile never shift a page). Filters: status, and
-- workflow names (exact; a workflow's name and its older aliases). A cancelled run's
-- run_cancelled payload comes along (its reason).
-- params: status (or NULL), names (text[] or NULL), after (run id or NULL), limit
SELECT r.id, r.status::text AS status, r.name, r.output_cbor, r.error_cbor, r.error_code,
       r.created_at, r.completed_at,
       CASE WHEN r.status::text = 'cancelled' THEN (
           SELECT e.payload_cbor FROM workflow.workflow_events e
           WHERE e.run_id = r.id AND e.type = 'run_cancelled'
           ORDER BY e.id DESC LIMIT 1) END AS cancelled_cbor
FROM workflow.workflow_runs r
WHERE (%(status)s::text IS NULL OR r.status::text = %(status)s::text)
  AND (%(names)s::text[] IS NULL OR r.name = ANY (%(names)s::text[]))
  AND (%(after)s::text IS NULL OR (r.created_at, r.id) < (
        SELECT a.created_at, a.id FROM workflow.workflow_runs a WHERE a.id = %(after)s::text))
ORDER BY r.created_at DESC, r.id DESC
LIMIT %(limit)s;
