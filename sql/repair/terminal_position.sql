-- terminal_position: where a restored terminal event (step_completed / step_failed /
-- step_retrying / wait_completed) belongs in a run's log, so that every replay consumes it.
-- Replay (core beta.39 EventsConsumer, and wfctl's engine) reads the log strictly in id order
-- and a new entity's events can only be consumed once the workflow code has asked for it. If
-- an entity was CREATED after the lost completion happened (its creation event's created_at
-- is at or after the entity row's completion time) the code that created it may have run
-- only because the completion was known: appended at the tail, the completion would sort
-- after that creation and the replay would stop at it ("Replay could not consume event" /
-- REPLAY_DIVERGENCE). This query finds the first such creation event after the entity's own
-- last event (the "dependent" event), the event just before it, and a created_at for the
-- restored event inside [previous, dependent] (as close to the completion time as allowed,
-- so the replay clock neither jumps nor goes backwards). No dependent event: append at the
-- tail, as before.
-- Creation events: step_created, wait_created, hook_created, hook_conflict (the world's
-- answer to a hook_created), and a lazy step_started (the first event of its step).
-- resolved_between counts other entities' outcomes (a step's completion, failure or retry, a
-- wait_completed, a hook_received) between the entity's last event and that creation: the
-- code may have gone on because of one of those (a race against a sleep, a hook), not
-- because of the lost completion; then no position is right for every replay.
-- Times: done_at is the JS-written completion time (UTC wall clock, reference §1.8);
-- created_at is the DB default (session TimeZone wall clock): done_at is converted to it.
-- params: run_id, correlation_id, done_at
WITH own AS (
    SELECT max(e.id) AS last_id
    FROM workflow.workflow_events e
    WHERE e.run_id = %(run_id)s AND e.correlation_id = %(correlation_id)s
),
done AS (
    SELECT ((%(done_at)s::timestamp AT TIME ZONE 'UTC')
            AT TIME ZONE current_setting('TimeZone')) AS local_at
),
dependent AS (
    SELECT e.id, e.type, e.correlation_id, e.created_at
    FROM own, done, workflow.workflow_events e
    WHERE e.run_id = %(run_id)s
      AND e.id > own.last_id
      AND e.correlation_id IS DISTINCT FROM %(correlation_id)s
      AND e.created_at >= done.local_at
      AND (e.type IN ('step_created', 'wait_created', 'hook_created', 'hook_conflict')
           OR (e.type = 'step_started'
               AND NOT EXISTS (SELECT 1 FROM workflow.workflow_events c
                               WHERE c.run_id = e.run_id AND c.correlation_id = e.correlation_id
                                 AND c.id < e.id)))
    ORDER BY e.id
    LIMIT 1
),
previous AS (
    SELECT p.id, p.created_at
    FROM dependent d, workflow.workflow_events p
    WHERE p.run_id = %(run_id)s AND p.id < d.id
    ORDER BY p.id DESC
    LIMIT 1
)
SELECT own.last_id,
       (SELECT count(*) FROM workflow.workflow_events b
        WHERE b.run_id = %(run_id)s AND b.id > own.last_id AND b.id < d.id
          AND b.correlation_id IS DISTINCT FROM %(correlation_id)s
          AND b.type IN ('step_completed', 'step_failed', 'step_retrying', 'wait_completed',
                         'hook_received')) AS resolved_between,
       d.id AS dependent_id,
       d.type AS dependent_type,
       d.correlation_id AS dependent_correlation_id,
       p.id AS previous_id,
       least(d.created_at, greatest(p.created_at, done.local_at)) AS placed_at
FROM own
CROSS JOIN done
LEFT JOIN dependent d ON true
LEFT JOIN previous p ON true;
