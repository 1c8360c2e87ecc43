-- WF143 a step or wait completion sorts before the entity's creation event (upstream rules
-- step.terminal-after-created, wait.completed-after-created).
-- Replay reads the log in id order. Core beta.39's step and sleep consumers finish at the
-- entity's terminal event, so a step_created / wait_created after it is offered to no consumer:
-- "Replay could not consume event" on every replay. It is what a creation event restored at
-- the tail after the entity already completed looks like (a repair of a step or wait row
-- without its creation event that did not look for later events of the entity).
-- A step_started before step_created is NOT reported: both runtimes accept it (a restored
-- step_created may sit among the step's events; beta29-fault-behaviour).
-- Age: the entity's newest event's created_at (DB default) -> localtimestamp.
-- params: live_only, run_ids, since, min_age.
WITH runs AS (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
),
per_entity AS (
    SELECT e.run_id, e.correlation_id,
           min(e.id) FILTER (WHERE e.type IN ('step_created', 'wait_created')) AS created,
           min(e.id) FILTER (WHERE e.type IN ('step_completed', 'step_failed', 'step_retrying',
                                              'wait_completed')) AS first_outcome,
           (array_agg(e.type ORDER BY e.id) FILTER (
                WHERE e.type IN ('step_completed', 'step_failed', 'step_retrying',
                                 'wait_completed')))[1] AS outcome_type,
           max(e.created_at) AS newest
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type IN ('step_created', 'wait_created', 'step_completed', 'step_failed',
                     'step_retrying', 'wait_completed')
      AND e.correlation_id IS NOT NULL
    GROUP BY 1, 2
)
SELECT p.run_id,
       p.correlation_id AS entity_id,
       p.newest::timestamptz AS observed_at,
       p.newest >= localtimestamp - %(min_age)s::interval AS in_flight,
       format('%%s %%s sorts before the creation event %%s', p.outcome_type, p.first_outcome,
              p.created) AS detail
FROM per_entity p
WHERE p.first_outcome < p.created
ORDER BY p.newest;
