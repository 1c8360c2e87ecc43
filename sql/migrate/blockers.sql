-- blockers: sessions holding a lock on a relation, oldest transaction first, to say who a
-- lock_timeout lost to. ACCESS EXCLUSIVE conflicts with every lock, so any holder counts.
-- params: %(relation)s text (schema-qualified name)
SELECT DISTINCT ON (a.xact_start, a.pid)
       a.pid, a.application_name, a.usename AS "user", a.state,
       round(extract(epoch FROM now() - a.xact_start)::numeric, 1) AS xact_seconds,
       left(btrim(regexp_replace(regexp_replace(a.query, '--[^\n]*', '', 'g'), '\s+', ' ', 'g')),
            80) AS query
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = to_regclass(%(relation)s)
  AND l.granted
  AND l.pid <> pg_backend_pid()
ORDER BY a.xact_start, a.pid
LIMIT 5;
