-- schema_lock: serialises wfctl's changes to its own schema `wfctl` (bootstrap, adoption, the
-- repair audit log a first `repair --apply` creates). Transaction-level: released at commit or
-- rollback, also when wfctl dies. Keys 'wfct', 'schm' as int4 (2003199860, 1935894637);
-- `migrate --online` uses ('wfct', 'migr').
SELECT pg_advisory_xact_lock(2003199860, 1935894637);
