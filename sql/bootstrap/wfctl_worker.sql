-- wfctl_worker: the worker's tables in wfctl's own schema (alembic revision w0004, both eras).
--
-- run_queue: one row per run handed to workers, from its creation (or adoption) until its
-- terminal event, which deletes the row in the same transaction. A row is READY when
-- lease_owner IS NULL and ready_at <= now(); ready_at NULL = parked (waiting for a hook).
-- A worker claims a ready row (FOR UPDATE SKIP LOCKED), owns it while lease_until is in the
-- future (heartbeats renew it) and releases it with the time of the run's next timer.
-- wake_seq counts wake-ups from outside (hook receipt): a release that sees it changed since
-- its claim makes the row ready at once, so a payload that arrives mid-drive is never missed.
CREATE TABLE wfctl.run_queue (
    run_id        varchar     PRIMARY KEY,
    queue         text        NOT NULL DEFAULT 'default',
    workflow_name varchar     NOT NULL,
    ready_at      timestamptz DEFAULT now(),
    lease_owner   text,
    lease_until   timestamptz,
    wake_seq      bigint      NOT NULL DEFAULT 0,
    claims        integer     NOT NULL DEFAULT 0,
    recoveries    integer     NOT NULL DEFAULT 0,
    enqueued_at   timestamptz NOT NULL DEFAULT now(),
    claimed_at    timestamptz,
    CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);
-- The claim scans ready rows of one queue in ready_at order.
CREATE INDEX run_queue_ready_index ON wfctl.run_queue (queue, ready_at)
    WHERE lease_owner IS NULL;
-- Heartbeats and recovery look rows up by owner / expiry.
CREATE INDEX run_queue_lease_index ON wfctl.run_queue (lease_owner, lease_until)
    WHERE lease_owner IS NOT NULL;

-- workers: live worker processes (a row per process; deleted on graceful exit, or by
-- recovery once its heartbeat is older than its lease timeout).
CREATE TABLE wfctl.workers (
    worker_id    text        PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    queue        text        NOT NULL,
    concurrency  integer     NOT NULL,
    lease_seconds double precision NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
