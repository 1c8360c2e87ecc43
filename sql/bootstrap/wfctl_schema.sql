-- wfctl_schema: wfctl's own schema. First table: the audit log every repair writes inside
-- its own transaction, so a repair and its record commit or vanish together.
CREATE SCHEMA IF NOT EXISTS wfctl;

CREATE TABLE wfctl.repair_log (
    id            bigserial   PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    db_user       text        NOT NULL DEFAULT current_user,
    wfctl_version text        NOT NULL,
    reason        text        NOT NULL,
    code          text        NOT NULL,
    run_id        text        NOT NULL,
    entity_id     text,
    event_ids     text[]      NOT NULL DEFAULT '{}',
    details       jsonb       NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX repair_log_run_id_index ON wfctl.repair_log (run_id);
CREATE INDEX repair_log_at_index ON wfctl.repair_log (at);
