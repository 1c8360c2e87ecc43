-- advisory_unlock: release the single-flight lock taken by try_advisory_lock.
SELECT pg_advisory_unlock(2003199860, 1835624306) AS unlocked;
