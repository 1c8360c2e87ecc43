-- watermark_ddl: where `doctor --incremental` keeps what it verified (created on first use,
-- only when asked). verified_to: every change committed after it is newer than it, in the
-- DB-default clock (created_at columns, session TimeZone); verified_to_utc: the same instant
-- in the JS clock (UTC wall time: updated_at, and the time part of ULID ids). flagged:
-- kind 'finding', the runs that had a finding (or an in-flight one) at that pass, re-checked
-- every time; kind 'live', the runs that were pending or running then (a run row changed
-- since is either live now or was live then).
CREATE SCHEMA IF NOT EXISTS wfctl;
CREATE TABLE IF NOT EXISTS wfctl.doctor_watermark (
    scope           text        PRIMARY KEY,
    verified_to     timestamp   NOT NULL,
    verified_to_utc timestamp   NOT NULL,
    full_pass_at    timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    wfctl_version   text        NOT NULL
);
CREATE TABLE IF NOT EXISTS wfctl.doctor_flagged (
    scope  text NOT NULL,
    kind   text NOT NULL,
    run_id text NOT NULL,
    PRIMARY KEY (scope, kind, run_id)
);
