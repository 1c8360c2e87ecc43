-- inflight_active_runs: the runs a release upgrade finds in flight (pending or running: asleep,
-- waiting on a hook, mid-step), with what the cores seed their correlation ids from: the run
-- id, the workflow name, the deployment id (5.0 cores) and started_at (4.x cores; the
-- runtime reads it as a JavaScript Date, so whole milliseconds, truncated).
-- params: run_ids (text[] or NULL: every active run)
SELECT r.id, r.name, r.status::text AS status, r.deployment_id,
       (floor(extract(epoch FROM r.started_at) * 1000))::bigint AS started_ms,
       r.spec_version
FROM workflow.workflow_runs r
WHERE r.status IN ('pending', 'running')
  AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
ORDER BY r.id;
