-- advisory_unlock: release an action's single-flight lock (see try_advisory_lock).
-- params: action_key (int)
SELECT pg_advisory_unlock(2003199860, %(action_key)s::int);
