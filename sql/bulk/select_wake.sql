-- select_wake: the WDK's dead letters: live runs whose queue jobs are all spent (at least one
-- job with attempts >= max_attempts, none with attempts left), matching a bulk filter.
-- Nothing will ever deliver such a run again. Jobs wfctl failed on purpose (last_error
-- 'wfctl: ...', surplus wake-ups stopped by repair) are not dead letters.
-- Re-run per run under its lock (run_ids) before it is redriven.
-- params: run_ids, statuses, workflow, older_than, newer_than, error_code (as
--         select_cancel), error (substring of the jobs' last_error, or NULL), task
-- Tasks: the flows task and its sibling steps task (4.x: a spent step job is a dead letter too).
-- error_code / attributes (beta.29 on) are read from the row's jsonb form: NULL on a 4.x world.
WITH jobs AS (
    SELECT j.id, j.attempts, j.max_attempts, j.last_error, j.locked_at,
           coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
                    convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId')
               AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
      AND j.payload ->> 'data' IS NOT NULL
),
dead AS (
    SELECT run_id, array_agg(id ORDER BY id) AS job_ids,
           string_agg(left(coalesce(last_error, ''), 200), ' | ' ORDER BY id) AS last_error
    FROM jobs
    WHERE attempts >= max_attempts AND coalesce(last_error, '') NOT LIKE 'wfctl:%%'
    GROUP BY run_id
)
SELECT r.id, r.status::text AS status, r.name, r.created_at,
       to_jsonb(r) ->> 'error_code' AS error_code, d.job_ids,
       d.last_error
FROM workflow.workflow_runs r
JOIN dead d ON d.run_id = r.id
WHERE r.status IN ('pending', 'running')
  AND NOT EXISTS (SELECT 1 FROM jobs l WHERE l.run_id = r.id AND l.attempts < l.max_attempts)
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
  AND (%(statuses)s::text[] IS NULL OR r.status::text = ANY (%(statuses)s::text[]))
  AND (%(workflow)s::text IS NULL OR r.name LIKE %(workflow)s::text)
  AND (%(older_than)s::interval IS NULL OR r.created_at < localtimestamp - %(older_than)s::interval)
  AND (%(newer_than)s::interval IS NULL OR r.created_at >= localtimestamp - %(newer_than)s::interval)
  AND (%(error_code)s::text IS NULL OR to_jsonb(r) ->> 'error_code' = %(error_code)s::text)
  AND (%(error)s::text IS NULL OR d.last_error LIKE '%%' || %(error)s::text || '%%')
ORDER BY r.created_at, r.id;
