-- select_cancel: live runs (pending/running) matching a bulk filter, oldest first: what
-- `wfctl runs cancel --where` would cancel. Each filter term is NULL when not given; the
-- command refuses a filter with no term at all. Also run per run under its lock (run_ids)
-- to re-check that the run still matches before it is cancelled.
-- created_at is a DB-default column (session wall clock): compared with localtimestamp.
-- params: run_ids (text[] or NULL), statuses (text[] or NULL), workflow (LIKE pattern or
--         NULL), older_than / newer_than (interval or NULL), error_code (text or NULL)
-- error_code / attributes (beta.29 on) are read from the row's jsonb form: NULL on a 4.x world.
SELECT r.id, r.status::text AS status, r.name, r.created_at,
       to_jsonb(r) ->> 'error_code' AS error_code
FROM workflow.workflow_runs r
WHERE r.status IN ('pending', 'running')
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
  AND (%(statuses)s::text[] IS NULL OR r.status::text = ANY (%(statuses)s::text[]))
  AND (%(workflow)s::text IS NULL OR r.name LIKE %(workflow)s::text)
  AND (%(older_than)s::interval IS NULL OR r.created_at < localtimestamp - %(older_than)s::interval)
  AND (%(newer_than)s::interval IS NULL OR r.created_at >= localtimestamp - %(newer_than)s::interval)
  AND (%(error_code)s::text IS NULL OR to_jsonb(r) ->> 'error_code' = %(error_code)s::text)
ORDER BY r.created_at, r.id;
