-- advisory_holder: who holds the single-flight migration lock (see try_advisory_lock), so a
-- second `wfctl migrate` can name it.
SELECT a.pid, a.application_name, a.usename AS "user", host(a.client_addr) AS client_addr,
       a.backend_start, a.state, now() - a.query_start AS running_for,
       -- the statement without its leading comment lines, on one line
       left(btrim(regexp_replace(regexp_replace(a.query, '--[^\n]*', '', 'g'), '\s+', ' ', 'g')),
            120) AS query
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted
  AND l.classid = 2003199860 AND l.objid = 1835624306 AND l.objsubid = 2
LIMIT 1;
