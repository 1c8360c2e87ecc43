-- try_advisory_lock: single flight for migrations. Session-level, released when the session
-- ends (also when wfctl is killed: the server ends the session). Keys: 'wfct', 'migr' as
-- int4 (2003199860, 1835624306); an operator can hold the same lock around the package's
-- own migrator with `SELECT pg_advisory_lock(2003199860, 1835624306)`.
SELECT pg_try_advisory_lock(2003199860, 1835624306) AS locked;
