-- move_event_ids: give events of a run new ids (a slot-log rewrite). The events key
-- (run_id, id) is checked row by row, so a move whose new id is still held by another event
-- that moves too (slot 2 -> 3 while 3 -> 4) would collide: such moves first take a parked id
-- (prefix 'wfctl_park_', which no writer produces) and place_event_ids strips it at the end;
-- a move to an id nobody holds (a wevt_ id to a slot above the run's highest) goes directly
-- (prefix ''). Only `id` changes: type, correlation id, payload bytes (encrypted ones
-- included), spec_version and created_at stay exactly as they were.
-- params: run_id, old_ids[], new_ids[], prefix
UPDATE workflow.workflow_events e
SET id = %(prefix)s || m.new_id
FROM unnest(%(old_ids)s::varchar[], %(new_ids)s::varchar[]) AS m(old_id, new_id)
WHERE e.run_id = %(run_id)s AND e.id = m.old_id
RETURNING e.id;
