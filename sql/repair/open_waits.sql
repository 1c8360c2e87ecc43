-- open_waits: a run's waits created and not completed (wait_created without wait_completed),
-- with the wait_created payload (its exact resumeAt) and whether the wait row still exists.
-- A run's end deletes its wait rows; the revival (--allow-revive) restores the open ones.
-- params: run_id
SELECT c.correlation_id, c.payload_cbor, c.spec_version,
       EXISTS (SELECT 1 FROM workflow.workflow_waits w
               WHERE w.wait_id = %(run_id)s || '-' || c.correlation_id) AS has_row
FROM workflow.workflow_events c
WHERE c.run_id = %(run_id)s AND c.type = 'wait_created'
  AND NOT EXISTS (SELECT 1 FROM workflow.workflow_events d
                  WHERE d.run_id = c.run_id AND d.correlation_id = c.correlation_id
                    AND d.type = 'wait_completed')
ORDER BY c.id;
