-- idempotency_lock: serialise run creations that carry the same idempotency key (a
-- transaction-scoped advisory lock on the key's hash), so the lookup that follows is final.
-- params: key
SELECT pg_advisory_xact_lock(hashtextextended('wfctl.idempotency:' || %(key)s, 0));
