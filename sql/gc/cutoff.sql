-- cutoff: the completion time before which a terminal run is garbage, fixed once per gc so a
-- long collection does not chase a moving line. completed_at is written by the Node process
-- as UTC wall time (timestamp without time zone), so the cutoff is UTC wall time too.
-- params: older_than (interval)
SELECT (now() AT TIME ZONE 'UTC') - %(older_than)s::interval AS cutoff;
