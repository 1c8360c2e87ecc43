-- open_event_writers: the other transactions that have written to workflow.workflow_events
-- and not yet ended. An INSERT (or UPDATE, DELETE) takes ROW EXCLUSIVE on the table and holds
-- it until commit or rollback, so these are exactly the writers whose rows this session
-- cannot see yet: one may be appending the very event a repair is about to append (beta.29
-- updates the step row, then inserts its event in a second autocommit: no row lock covers
-- the insert). The repair waits for them to end before its first write (runner._await_
-- event_writers), and again before it commits. Not waited for: another repair's transaction
-- (named by sql/repair/transaction_name.sql: repairs of one run are serialised by its row
-- lock; a dry run's rehearsal never commits). A prepared transaction (pid NULL) counts.
-- limit_s: the session's lock_timeout in seconds (0: none set), the longest wait.
SELECT l.pid, l.virtualtransaction,
       extract(epoch FROM current_setting('lock_timeout')::interval)::float8 AS limit_s
FROM pg_catalog.pg_locks l
LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation'
  AND l.relation = 'workflow.workflow_events'::regclass
  AND l.mode = 'RowExclusiveLock'
  AND l.granted
  AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
  AND a.application_name IS DISTINCT FROM %(repairing)s;
