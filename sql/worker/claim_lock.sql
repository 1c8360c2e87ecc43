-- claim_lock: serialises claims of one queue while per-workflow limits are in force, so two
-- workers cannot both count the same free place (transaction-scoped).
-- params: queue
SELECT pg_advisory_xact_lock(hashtextextended('wfctl.claim:' || %(queue)s, 0));
