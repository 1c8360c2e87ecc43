-- WF133 stranded run (upstream #3993; §5.4): pending or running, and nothing will ever wake it:
-- no live queue job names the run, and it has no hook row (a hook is resumed from outside).
-- A wait does not count: without a job nothing delivers it when it falls due. The package
-- has no reaper; such a run stays put until some process calls world.start().
-- Age: updated_at is written by the JS clock in UTC (a run between two jobs is not stranded).
-- Age, either column type: to_timestamp(extract(epoch FROM x)) is x's instant, reading a
-- `timestamp` as UTC wall time (as drizzle writes JS dates) and a `timestamptz` (upstream
-- 0026) as itself, so the gate is right on servers outside UTC for both.
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
WITH runs AS (
    SELECT r.id, r.name, r.status, r.updated_at
    FROM workflow.workflow_runs r
    WHERE r.status IN ('pending', 'running')
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
job_runs AS (
    SELECT DISTINCT convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId'
           AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier LIKE %(task)s
      AND j.attempts < j.max_attempts
      AND j.payload ->> 'data' IS NOT NULL
)
SELECT r.id AS run_id,
       r.id AS entity_id,
       r.updated_at AS observed_at,
       to_timestamp(extract(epoch FROM r.updated_at)) >= now() - %(min_age)s::interval AS in_flight,
       format('run %%s is %%s with no live job and no hook%%s', r.name, r.status,
              coalesce((SELECT format('; wait %%s due %%s', w.wait_id, w.resume_at)
                        FROM workflow.workflow_waits w
                        WHERE w.run_id = r.id AND w.status = 'waiting'
                        ORDER BY w.resume_at LIMIT 1), '')) AS detail
FROM runs r
WHERE NOT EXISTS (SELECT 1 FROM job_runs j WHERE j.run_id = r.id)
  AND NOT EXISTS (SELECT 1 FROM workflow.workflow_hooks h WHERE h.run_id = r.id)
ORDER BY r.updated_at;
