-- try_advisory_lock: single flight for one kind of operator action (gc, bulk actions).
-- Session level: released when the session ends, also when wfctl is killed. Keys: 'wfct'
-- as int4 (2003199860) and one int4 per action (gc: 'gc  ' = 1734549536).
-- params: action_key (int)
SELECT pg_try_advisory_lock(2003199860, %(action_key)s::int) AS locked;
