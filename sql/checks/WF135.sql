-- WF135 queue job held by a silent worker (§1.7; beta29-fault-behaviour "jobs locked by a
-- worker that died"). graphile-worker 0.16.6 records a lock as two columns only,
-- _private_jobs.locked_by (worker-<18 hex>, random per worker, not stored anywhere else) and
-- locked_at; it has no worker registry or heartbeat, and its own sweep releases a lock only
-- after 4 hours. Meanwhile every wfctl repair of the run is refused, because a locked job is the
-- only visible sign of a live writer.
-- A finding: a job for a run in scope, locked longer than --min-age, while the run's log has
-- been silent for as long (a live delivery writes step/wait events as it goes). On beta.29 a
-- delivery cannot hold its lock much past 300 s (undici's fetch deadline fails the job), so at
-- the default --min-age a finding is a dead worker's lock; from beta.43 on deliveries have no
-- deadline and a live inline step can hold a lock longer: the detail says what is known.
-- Shown for the operator: who holds it, since when, the run's last event, and how many other
-- client sessions are connected to the database (0: no worker process is connected at all).
-- Released by `wfctl repair --apply --unlock-older-than AGE` (see wfctl/repair/wf135.py).
-- A lock on a job of a run that has ended (--all, --run) harms nothing: the delivery finds the
-- run ended and the job is done; `ended` makes it info (wfctl/doctor/wf135.py).
-- lock_reset: graphile's own reset window (wfctl/world/queue_locks.py, 4 hours).
-- Needs graphile_worker. params: live_only, run_ids, since, min_age, task, own_pids (int[] or
-- NULL), lock_reset.
-- Tasks: the world's flows task and its sibling steps task (4.x runs each step as its own
-- job there, its body naming the run as workflowRunId; other releases have no such jobs).
WITH runs AS (
    SELECT r.id, r.status IN ('completed', 'failed', 'cancelled') AS ended
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
locked AS (
    SELECT j.id, j.key, j.locked_by, j.locked_at, j.attempts, j.max_attempts,
           coalesce(convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',
         convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'workflowRunId') AS run_id
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier IN (%(task)s, regexp_replace(%(task)s, 'flows$', 'steps'))
      AND j.locked_at IS NOT NULL
      AND j.payload ->> 'data' IS NOT NULL
),
sessions AS (
    SELECT count(*) AS others
    FROM pg_stat_activity a
    WHERE a.datname = current_database()
      AND a.backend_type = 'client backend'
      AND a.pid <> pg_backend_pid()
      -- nor the doctor's own other sessions (`doctor --jobs`): they are not workers
      AND (%(own_pids)s::int[] IS NULL OR a.pid <> ALL (%(own_pids)s::int[]))
)
SELECT l.run_id,
       l.id::text AS entity_id,
       l.locked_at AS observed_at,
       l.locked_at >= now() - %(min_age)s::interval AS in_flight,
       format('job %%s (key %%s, attempt %%s of %%s) locked by %%s since %%s (%%s); '
              'last event of the run at %%s; %%s other client session(s) on this database%%s',
              l.id, l.key, l.attempts, l.max_attempts, l.locked_by,
              to_char(l.locked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'),
              -- the age as wfctl prints every age (durations.format_duration): `1d 22h`
              regexp_replace(
                  CASE WHEN a.s >= 86400 THEN format('%%sd %%sh', a.s / 86400, a.s %% 86400 / 3600)
                       WHEN a.s >= 3600 THEN format('%%sh %%sm', a.s / 3600, a.s %% 3600 / 60)
                       WHEN a.s >= 60 THEN format('%%sm %%ss', a.s / 60, a.s %% 60)
                       ELSE format('%%ss', a.s) END, ' 0[dhms]$', ''),
              coalesce(to_char(e.last::timestamptz AT TIME ZONE 'UTC',
                               'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'), 'never'),
              s.others,
              CASE WHEN s.others = 0 THEN ': no worker is connected, the holder is dead'
                   WHEN l.locked_at < now() - %(lock_reset)s::interval
                       THEN ': past graphile''s 4 h reset, the next worker start frees it'
                   ELSE '' END) AS detail,
       r.ended
FROM locked l
JOIN runs r ON r.id = l.run_id
CROSS JOIN sessions s
CROSS JOIN LATERAL (
    SELECT floor(extract(epoch FROM now() - l.locked_at))::bigint AS s  -- held, in seconds
) a
LEFT JOIN LATERAL (
    SELECT max(ev.created_at) AS last
    FROM workflow.workflow_events ev
    WHERE ev.run_id = l.run_id
) e ON true
WHERE e.last IS NULL OR e.last < localtimestamp - %(min_age)s::interval
ORDER BY l.locked_at;
