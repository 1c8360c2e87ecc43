-- wfctl_hooks: what wfctl keeps about hooks besides the world's rows (alembic revision w0006,
-- both eras; schema `wfctl` only, never read by the Node package).
--
-- hook_inbox: deliveries that arrived before their hook existed (`Client.resume_hook` with
-- keep=...). One row per delivery, kept until expires_at; handed over (row deleted and
-- hook_received appended in ONE transaction, so exactly once) when a wfctl run creates a
-- hook with the token, or by the resume itself when the hook appeared meanwhile. Rows past
-- expires_at are never delivered and are deleted by the next keep.
CREATE TABLE wfctl.hook_inbox (
    id         bigserial   PRIMARY KEY,
    token      varchar     NOT NULL,
    payload    bytea       NOT NULL,
    kept_at    timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX hook_inbox_token_index ON wfctl.hook_inbox (token, id);
CREATE INDEX hook_inbox_expiry_index ON wfctl.hook_inbox (expires_at);
-- hook_types: the payload type of a typed hook (`create_hook(payload_type=Shipment)`) as
-- `module:qualname`, written with the hook's row, so `resume_hook` can validate a payload
-- before writing it. Deleted with the run's end (and with the hook's disposal).
CREATE TABLE wfctl.hook_types (
    run_id   varchar NOT NULL,
    hook_id  varchar NOT NULL,
    type_ref text    NOT NULL,
    PRIMARY KEY (run_id, hook_id)
);
