-- recovery_lock: recovery is single-flight across all workers: whoever gets this
-- transaction-scoped lock recovers; the others skip this round.
SELECT pg_try_advisory_xact_lock(hashtextextended('wfctl.worker.recovery', 0));
