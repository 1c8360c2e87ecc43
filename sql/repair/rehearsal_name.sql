-- rehearsal_name: a dry run's rehearsal (the apply in a transaction rolled back whole) names
-- itself for its transaction only, so that an apply does not wait for its writes to the
-- events table (sql/repair/open_event_writers.sql): they never commit.
-- params: name
SELECT set_config('application_name', %(name)s, true);
