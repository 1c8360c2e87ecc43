-- wake: a transition made outside the run's driver (hook receipt) makes the run ready now,
-- in the same transaction. wake_seq tells a worker that holds the run while this commits to
-- hand it straight back (see release). No row: the run is not handed to workers.
-- params: run_id
WITH woken AS (
    UPDATE wfctl.run_queue
    SET ready_at = now(), wake_seq = wake_seq + 1
    WHERE run_id = %(run_id)s
    RETURNING queue
)
SELECT pg_notify('wfctl_worker', queue) FROM woken;
