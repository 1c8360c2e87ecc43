-- WF153 candidates: wait rows with their wait_created event (upstream rule
-- wait.resume-at-stable, the row's side). Python (wfctl/doctor/wf153.py) decodes the event's
-- resumeAt and reports the rows whose resume_at names another instant (whole milliseconds).
-- The package inserts the row and the event from one eventData, and a second wait_created
-- for the same wait is refused ("already exists", no event, no update), so the runtime never
-- moves the row's deadline. A hand edit does ("wake the sleeper now": UPDATE resume_at), and
-- nothing reads it: the runtime schedules and completes the wait from the event. Tools that
-- do read the row are misled: wfctl's own WF102 / WF131 use it.
-- A wait row without wait_created is WF102's, not a candidate here. Runs of spec >= 9 are
-- skipped: the log is authoritative there and the package keeps no wait state in step.
-- Age: the wait row's updated_at (JS clock) as an instant.
-- Columns: the five finding columns (detail left to Python), then the row's resume_at as an
-- instant and the event's payload.
-- params: live_only, run_ids, since, min_age.
-- Performance: driven from the waits table (rows of live runs, terminal runs' rows are
-- deleted), each joined to its run by primary key and to its wait_created through the
-- partial unique index (run_id, correlation_id, type).
SELECT w.run_id,
       substring(w.wait_id FROM length(w.run_id) + 2) AS entity_id,
       to_timestamp(extract(epoch FROM w.updated_at)) AS observed_at,
       to_timestamp(extract(epoch FROM w.updated_at)) >= now() - %(min_age)s::interval
           AS in_flight,
       NULL::text AS detail,
       to_timestamp(extract(epoch FROM w.resume_at)) AS resume_at,
       e.payload_cbor
FROM workflow.workflow_waits w
JOIN workflow.workflow_runs r ON r.id = w.run_id
JOIN workflow.workflow_events e
  ON e.run_id = w.run_id
 AND e.correlation_id = substring(w.wait_id FROM length(w.run_id) + 2)
 AND e.type = 'wait_created'
WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
  AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
  AND NOT coalesce(substring(r.spec_version FROM '^[0-9]{1,9}$')::int >= 9, false)
  AND w.resume_at IS NOT NULL
  AND e.payload_cbor IS NOT NULL
ORDER BY w.updated_at;
