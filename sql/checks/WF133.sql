-- WF133 stranded run (upstream #3993; §5.4): pending or running, and nothing will ever wake it:
-- no live queue job names the run, and it has no hook row (a hook is resumed from outside).
-- A wait does not count: without a job nothing delivers it when it falls due. The package
-- has no reaper; such a run stays put until some process calls world.start().
-- A hook row excuses a run (it waits for a resume from outside) unless the run also has a
-- `waiting` wait past its resume_at with no job: nothing will ever deliver that wait
-- (upstream vercel/workflow#3743: an early continuation burns its idempotency key and the
-- re-enqueue is dropped, so the run sleeps forever; upstream scenario
-- sleep-wait-continuation-stranded). A sleep raced against a hook is the common shape.
-- Age: updated_at and resume_at are written by the JS clock (a run between two jobs is not
-- stranded); for the overdue wait, the time since it fell due counts as well.
-- Age, either column type: to_timestamp(extract(epoch FROM x)) is x's instant, reading a
-- `timestamp` as UTC wall time (as drizzle writes JS dates) and a `timestamptz` (upstream
-- 0026) as itself, so the gate is right on servers outside UTC for both.
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task.
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
WITH runs AS (
    SELECT r.id, r.name, r.status, r.updated_at
    FROM workflow.workflow_runs r
    WHERE r.status IN ('pending', 'running')
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
job_runs AS (
    SELECT DISTINCT coalesce(x.b ->> 'runId', x.b ->> 'workflowRunId') AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    CROSS JOIN LATERAL (
        SELECT convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb AS b
    ) x
    WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
      AND j.attempts < j.max_attempts
      AND j.payload ->> 'data' IS NOT NULL
)
SELECT r.id AS run_id,
       r.id AS entity_id,
       to_timestamp(extract(epoch FROM r.updated_at)) AS observed_at,
       to_timestamp(extract(epoch FROM r.updated_at)) >= now() - %(min_age)s::interval
           OR (h.hooked
               AND to_timestamp(extract(epoch FROM w.resume_at)) >= now() - %(min_age)s::interval)
           AS in_flight,
       format('run %%s is %%s with no live job%%s%%s', r.name, r.status,
              CASE WHEN h.hooked THEN ' (it has a hook row)' ELSE ' and no hook' END,
              CASE WHEN w.wait_id IS NULL THEN ''
                   WHEN to_timestamp(extract(epoch FROM w.resume_at)) < now()
                       THEN format('; wait %%s overdue since %%s: nothing will deliver it',
                                   w.wait_id, to_char(w.resume_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'))
                   ELSE format('; wait %%s due %%s', w.wait_id, to_char(w.resume_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'))
              END) AS detail
FROM runs r
CROSS JOIN LATERAL (
    SELECT EXISTS (SELECT 1 FROM workflow.workflow_hooks h WHERE h.run_id = r.id) AS hooked
) h
LEFT JOIN LATERAL (
    SELECT w.wait_id, w.resume_at
    FROM workflow.workflow_waits w
    WHERE w.run_id = r.id AND w.status = 'waiting'
    ORDER BY w.resume_at
    LIMIT 1
) w ON true
WHERE NOT EXISTS (SELECT 1 FROM job_runs j WHERE j.run_id = r.id)
  AND (NOT h.hooked OR to_timestamp(extract(epoch FROM w.resume_at)) < now())
ORDER BY r.updated_at;
