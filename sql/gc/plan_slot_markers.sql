-- plan_slot_markers: slot era only: how many candidate runs carry a slot marker (the dry
-- run's count for delete_slot_markers; runs created before the migration have none).
-- params: cutoff (timestamp)
SELECT count(*)
FROM workflow.workflow_event_slots m
JOIN workflow.workflow_runs r ON r.id = m.run_id
WHERE r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp;
