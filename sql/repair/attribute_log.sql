-- attribute_log: the events a run's attributes fold from (run_created, then every attr_set),
-- in log order, for WF149's repair (read under the run row lock, which the package's attr_set
-- UPDATE also needs, so no attribute write lands in between).
-- params: run_id
SELECT type, payload_cbor
FROM workflow.workflow_events
WHERE run_id = %(run_id)s AND type IN ('run_created', 'attr_set')
ORDER BY created_at, id;
