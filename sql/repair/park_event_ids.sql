-- park_event_ids: first half of a renumbering. The events key (run_id, id) is checked row by
-- row, so moving ids in place (slot 2 -> 3 while 3 still exists) would collide; each moved
-- event first takes a parked id `wfctl_park_<new id>` that no writer can produce, and
-- place_event_ids then strips the prefix. Only `id` changes: type, correlation id, payload
-- bytes (encrypted ones included), spec_version and created_at stay exactly as they were.
-- params: run_id, old_ids[], new_ids[]
UPDATE workflow.workflow_events e
SET id = 'wfctl_park_' || m.new_id
FROM unnest(%(old_ids)s::varchar[], %(new_ids)s::varchar[]) AS m(old_id, new_id)
WHERE e.run_id = %(run_id)s AND e.id = m.old_id
RETURNING e.id;
