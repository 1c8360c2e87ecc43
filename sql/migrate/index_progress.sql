-- index_progress: how far one session's CREATE INDEX has got (pg_stat_progress_create_index,
-- PostgreSQL 12+), for the progress display. params: %(pid)s int
SELECT p.phase,
       p.blocks_total, p.blocks_done,
       p.tuples_total, p.tuples_done,
       p.lockers_total, p.lockers_done, p.current_locker_pid,
       p.partitions_total, p.partitions_done
FROM pg_catalog.pg_stat_progress_create_index p
WHERE p.pid = %(pid)s;
