-- transaction_name: a repair's transaction (a run's repair, or a dry run's rehearsal of the
-- apply, rolled back whole) names itself for the transaction only (set_config(..., true)),
-- so that another repair does not wait for its writes to the events table
-- (sql/repair/open_event_writers.sql): two repairs of one run are serialised by the run's
-- row lock already, and a rehearsal's writes never commit. Waiting for each other's open
-- writes, parallel repairs would each wait for the other to commit.
-- params: name
SELECT set_config('application_name', %(name)s, true);
