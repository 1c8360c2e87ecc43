-- written_by_wfctl: which of a duplicate's events wfctl's own repairs wrote (the audit log,
-- wfctl.repair_log.event_ids), for WF141's samples: "the second run_created is repair #12's".
-- One row per audited event among the entity's run_created (entity = the run) or terminal
-- events (step_completed / step_failed / wait_completed of that correlation id).
-- Read in the doctor's read-only transaction, only where schema wfctl holds the log.
-- params: run_ids, entity_ids (parallel arrays: one pair per sample).
WITH f AS (
    SELECT * FROM unnest(%(run_ids)s::text[], %(entity_ids)s::text[]) AS f(run_id, entity_id)
)
SELECT f.run_id, f.entity_id, e.id AS event_id, e.type, l.id AS audit_id, l.at
FROM f
JOIN workflow.workflow_events e
  ON e.run_id = f.run_id
 AND ((f.entity_id = f.run_id AND e.type = 'run_created')
      OR (e.correlation_id = f.entity_id
          AND e.type IN ('step_completed', 'step_failed', 'wait_completed')))
JOIN wfctl.repair_log l ON l.run_id = f.run_id AND e.id = ANY (l.event_ids)
ORDER BY f.run_id, f.entity_id, e.id;
