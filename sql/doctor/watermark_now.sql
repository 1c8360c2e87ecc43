-- watermark_now: the new watermark, taken BEFORE the pass reads anything: the earlier of now
-- and the start of the oldest transaction still open in this database. A row the pass does
-- not see was written by a transaction that was open then or started later, so its
-- DB-default created_at (the writer's transaction start) is at or after this instant.
-- Returned in both clocks (session wall time, UTC wall time).
WITH t AS (
    SELECT least(now(), (SELECT min(a.xact_start) FROM pg_catalog.pg_stat_activity a
                         WHERE a.datname = current_database() AND a.xact_start IS NOT NULL
                           AND a.pid <> pg_backend_pid())) AS at
)
SELECT t.at::timestamp AS verified_to, t.at AT TIME ZONE 'UTC' AS verified_to_utc FROM t;
