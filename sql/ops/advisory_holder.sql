-- advisory_holder: the session holding an action's single-flight lock (try_advisory_lock),
-- so a second runner can name it instead of just failing.
-- params: action_key (int)
SELECT a.pid, a.application_name, a.usename AS "user", a.backend_start,
       now() - a.xact_start AS in_transaction_for
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted
  AND l.classid = 2003199860 AND l.objid = %(action_key)s::int AND l.objsubid = 2
LIMIT 1;
