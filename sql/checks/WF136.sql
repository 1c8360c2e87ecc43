-- WF136 run of the wfctl runtime that nothing drives. A pending/running run written by wfctl's
-- own runtime (deployment_id 'wfctl') advances only while some process drives it: a
-- `wfctl worker` that leased it from wfctl.run_queue, or the process that started it (`wfctl
-- run`, `RunHandle.result()`), which holds a lease on the same queue row. Every driver holds
-- the run's session advisory lock (runtime/run_lock: key hashtextextended('wfctl.run:' || id,
-- 0)) while it drives; pg_locks shows it as classid (high 32 bits) and objid (low 32 bits).
-- A finding: no session holds that lock, and
--   not queued   no queue row: started by a process that ended without handing it over (a
--                killed `wfctl run` of an earlier wfctl, `start()` whose result() never ran);
--   lease expired  its driver's lease ran out and no live worker's recovery has made it
--                ready (a killed `wfctl run --wait` or worker, and no worker running);
--   unserved     ready in its queue, and no live worker of that queue serves its workflow.
-- A run parked on a hook (ready_at NULL) or whose timer is in the future waits on purpose.
-- observed_at: when it became undriven (its last event, the lease's end, its ready time);
-- younger than --min-age is in flight (a driver between two runs of its loop, a worker about
-- to recover a lease). entity_id: the case. Repaired by wfctl/repair/wf136.py.
-- Needs wfctl.run_queue. params: run_ids, since, min_age.
WITH runs AS (
    SELECT r.id, r.name, r.status::text AS status
    FROM workflow.workflow_runs r
    WHERE r.status IN ('pending', 'running')
      AND r.deployment_id = 'wfctl'
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
driven AS (
    SELECT (l.classid::bigint << 32) | l.objid::bigint AS key
    FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
      AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
),
undriven AS (
    SELECT r.id, r.name, r.status, q.queue, q.lease_owner, q.lease_until, q.ready_at,
           CASE WHEN q.run_id IS NULL THEN 'not queued'
                WHEN q.lease_owner IS NOT NULL AND q.lease_until < now() THEN 'lease expired'
                WHEN q.lease_owner IS NULL AND q.ready_at <= now() AND NOT EXISTS (
                    SELECT 1 FROM wfctl.workers w
                    WHERE w.queue = q.queue
                      AND w.heartbeat_at >= now() - make_interval(secs => w.lease_seconds)
                      AND (w.workflows IS NULL OR q.workflow_name = ANY (w.workflows))
                ) THEN 'unserved'
           END AS kind
    FROM runs r
    LEFT JOIN wfctl.run_queue q ON q.run_id = r.id
    WHERE NOT EXISTS (
        SELECT 1 FROM driven d WHERE d.key = hashtextextended('wfctl.run:' || r.id, 0)
    )
),
found AS (
    SELECT u.*,
           CASE u.kind WHEN 'lease expired' THEN u.lease_until
                       WHEN 'unserved' THEN u.ready_at
                       ELSE (SELECT max(ev.created_at)::timestamptz
                             FROM workflow.workflow_events ev WHERE ev.run_id = u.id)
           END AS since_at
    FROM undriven u
    WHERE u.kind IS NOT NULL
)
SELECT f.id AS run_id,
       f.kind AS entity_id,
       f.since_at AS observed_at,
       coalesce(f.since_at >= now() - %(min_age)s::interval, false) AS in_flight,
       CASE f.kind
           WHEN 'not queued' THEN format(
               '%%s run of %%s is in no queue and no session drives it (last event at %%s): '
               'the process that started it ended without handing it over', f.status, f.name,
               f.since_at)
           WHEN 'lease expired' THEN format(
               'the lease of %%s on this %%s run of %%s ran out at %%s and no session drives '
               'it: no live worker of queue %%L has recovered it', f.lease_owner, f.status,
               f.name, f.lease_until, f.queue)
           ELSE format(
               '%%s run of %%s is ready in queue %%L since %%s, but no live worker of that queue '
               'serves its workflow', f.status, f.name, f.queue, f.ready_at)
       END AS detail
FROM found f
ORDER BY f.since_at NULLS FIRST, f.id;
