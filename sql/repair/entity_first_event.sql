-- entity_first_event: an entity's first event in log (id) order, the event just before it,
-- and whether the entity already has its terminal event. A restored creation event
-- (step_created / wait_created / hook_created) must sort before that terminal event: core
-- beta.39's consumers finish there and would offer a later creation to no consumer (WF143).
-- params: run_id, correlation_id
WITH own AS (
    SELECT min(e.id) AS first_id,
           bool_or(e.type IN ('step_completed', 'step_failed', 'wait_completed',
                              'hook_disposed')) AS has_terminal
    FROM workflow.workflow_events e
    WHERE e.run_id = %(run_id)s AND e.correlation_id = %(correlation_id)s
)
SELECT own.first_id,
       own.has_terminal,
       f.created_at AS first_created_at,
       (SELECT max(p.id) FROM workflow.workflow_events p
        WHERE p.run_id = %(run_id)s AND p.id < own.first_id) AS previous_id
FROM own
LEFT JOIN workflow.workflow_events f ON f.run_id = %(run_id)s AND f.id = own.first_id;
