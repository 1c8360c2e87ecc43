-- spec_versions: how many runs and events of each spec version the world holds, for
-- `wfctl info`. Runs keep the spec version they were created with (runs.spec_version is text;
-- events.spec_version an integer), so a world holds several at once. expired_runs: runs whose
-- data retention deleted (expired_at set). Reads both tables whole (a sequential scan of the
-- events; see docs/benchmarks.md for its cost on a large world).
WITH runs AS (
    SELECT coalesce(spec_version, '') AS spec,
           count(*) AS runs,
           count(*) FILTER (WHERE expired_at IS NOT NULL) AS expired_runs
    FROM workflow.workflow_runs
    GROUP BY 1
),
events AS (
    SELECT coalesce(spec_version::text, '') AS spec, count(*) AS events
    FROM workflow.workflow_events
    GROUP BY 1
)
SELECT nullif(coalesce(r.spec, e.spec), '') AS spec,
       coalesce(r.runs, 0) AS runs,
       coalesce(r.expired_runs, 0) AS expired_runs,
       coalesce(e.events, 0) AS events
FROM runs r
FULL JOIN events e ON e.spec = r.spec;
