-- WF154 candidates: completed runs whose row holds no output, with their run_completed
-- payloads (upstream rule run.output-materialized). Python (wfctl/doctor/wf154.py) decodes
-- them and reports a run whose first run_completed carries an `output` the row lacks. A
-- run_completed without output (a workflow returning nothing) is fine, as upstream says.
-- The package's run_completed sets status and output_cbor in one UPDATE, so it never writes
-- this: a hand edit, a partial restore or a foreign tool that completed the row does. The
-- caller reads the row: core's run.returnValue takes runs.get's output, so it gets undefined.
-- Runs emptied by retention (expired_at) are skipped; a legacy JSON `output` counts as one.
-- Scope: completed runs only, so the default live scope has none (no full scan of the runs
-- every minute); --all, --run, --since and --incremental look at them.
-- Age: the run's completed_at (JS clock; else updated_at) as an instant.
-- Columns: the five finding columns (detail left to Python), then the run_completed payloads
-- in log order.
-- params: live_only, run_ids, since, min_age.
WITH runs AS NOT MATERIALIZED (
    SELECT r.id, coalesce(r.completed_at, r.updated_at) AS ended_at
    FROM workflow.workflow_runs r
    WHERE NOT %(live_only)s
      AND r.status = 'completed'
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
      AND r.output_cbor IS NULL
      AND r.output IS NULL
      AND r.expired_at IS NULL
)
SELECT r.id AS run_id,
       'output' AS entity_id,
       to_timestamp(extract(epoch FROM r.ended_at)) AS observed_at,
       to_timestamp(extract(epoch FROM r.ended_at)) >= now() - %(min_age)s::interval
           AS in_flight,
       NULL::text AS detail,
       array_agg(e.payload_cbor ORDER BY e.created_at, e.id) AS payloads
FROM runs r
JOIN workflow.workflow_events e ON e.run_id = r.id AND e.type = 'run_completed'
GROUP BY r.id, r.ended_at
ORDER BY r.ended_at;
