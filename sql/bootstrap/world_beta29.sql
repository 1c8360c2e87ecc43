-- world_beta29: the world catalog as @workflow/world-postgres 5.0.0-beta.29's migrations
-- 0000-0017 leave it, written in its final shape (wfctl's own DDL, not the package's files).
-- Column order matters: it is compared with the real package's catalog by a test.
-- The drizzle bookkeeping rows are inserted by the alembic revision from wfctl.world.drizzle.

CREATE SCHEMA IF NOT EXISTS workflow;
CREATE SCHEMA IF NOT EXISTS workflow_drizzle;

-- Enums live in schema `workflow` since migration 0015.
CREATE TYPE workflow.status AS ENUM ('pending', 'running', 'completed', 'failed', 'cancelled');
CREATE TYPE workflow.step_status AS ENUM ('pending', 'running', 'completed', 'failed', 'cancelled');
CREATE TYPE workflow.wait_status AS ENUM ('waiting', 'completed');

-- Runs. spec_version is varchar here (0005) although the package's model says integer.
CREATE TABLE workflow.workflow_runs (
    id                     varchar   NOT NULL,
    output                 jsonb,
    deployment_id          varchar   NOT NULL,
    status                 workflow.status NOT NULL,
    name                   varchar   NOT NULL,
    execution_context      jsonb,
    input                  jsonb,
    error                  text,
    created_at             timestamp NOT NULL DEFAULT now(),
    updated_at             timestamp NOT NULL DEFAULT now(),
    completed_at           timestamp,
    started_at             timestamp,
    output_cbor            bytea,
    execution_context_cbor bytea,
    input_cbor             bytea,
    expired_at             timestamp,
    spec_version           varchar,
    error_cbor             bytea,
    error_code             varchar,
    attributes             jsonb     NOT NULL DEFAULT '{}'::jsonb,
    encryption_public_key  varchar,
    CONSTRAINT workflow_runs_pkey PRIMARY KEY (id)
);
CREATE INDEX workflow_runs_name_index ON workflow.workflow_runs (name);
CREATE INDEX workflow_runs_status_index ON workflow.workflow_runs (status);

-- The event log. In beta.29 the key is the globally unique event id.
CREATE TABLE workflow.workflow_events (
    id             varchar   NOT NULL,
    type           varchar   NOT NULL,
    correlation_id varchar,
    created_at     timestamp NOT NULL DEFAULT now(),
    run_id         varchar   NOT NULL,
    payload        jsonb,
    payload_cbor   bytea,
    spec_version   integer,
    CONSTRAINT workflow_events_pkey PRIMARY KEY (id)
);
CREATE INDEX workflow_events_run_id_index ON workflow.workflow_events (run_id);
CREATE INDEX workflow_events_correlation_id_index ON workflow.workflow_events (correlation_id);
-- The only database-level guard against duplicate events: creation types only.
CREATE UNIQUE INDEX workflow_events_entity_creation_unique
    ON workflow.workflow_events (run_id, correlation_id, type)
    WHERE type IN ('step_created', 'hook_created', 'wait_created', 'attr_set');

CREATE TABLE workflow.workflow_steps (
    run_id       varchar   NOT NULL,
    step_id      varchar   NOT NULL,
    step_name    varchar   NOT NULL,
    status       workflow.step_status NOT NULL,
    input        jsonb,
    output       jsonb,
    error        text,
    attempt      integer   NOT NULL,
    started_at   timestamp,
    completed_at timestamp,
    created_at   timestamp NOT NULL DEFAULT now(),
    updated_at   timestamp NOT NULL DEFAULT now(),
    retry_after  timestamp,
    input_cbor   bytea,
    output_cbor  bytea,
    error_cbor   bytea,
    spec_version integer,
    CONSTRAINT workflow_steps_pkey PRIMARY KEY (step_id)
);
CREATE INDEX workflow_steps_run_id_index ON workflow.workflow_steps (run_id);
CREATE INDEX workflow_steps_status_index ON workflow.workflow_steps (status);

CREATE TABLE workflow.workflow_hooks (
    run_id         varchar   NOT NULL,
    hook_id        varchar   NOT NULL,
    token          varchar   NOT NULL,
    owner_id       varchar   NOT NULL,
    project_id     varchar   NOT NULL,
    environment    varchar   NOT NULL,
    created_at     timestamp NOT NULL DEFAULT now(),
    metadata       jsonb,
    metadata_cbor  bytea,
    spec_version   integer,
    is_webhook     boolean DEFAULT true,
    is_system      boolean DEFAULT false,
    resume_context bytea,
    CONSTRAINT workflow_hooks_pkey PRIMARY KEY (hook_id)
);
CREATE INDEX workflow_hooks_run_id_index ON workflow.workflow_hooks (run_id);
-- Not unique in beta.29: token ownership is checked by the world, not the index.
CREATE INDEX workflow_hooks_token_index ON workflow.workflow_hooks (token);

CREATE TABLE workflow.workflow_stream_chunks (
    id         varchar   NOT NULL,
    stream_id  varchar   NOT NULL,
    data       bytea     NOT NULL,
    created_at timestamp NOT NULL DEFAULT now(),
    eof        boolean   NOT NULL,
    run_id     varchar,
    CONSTRAINT workflow_stream_chunks_stream_id_id_pk PRIMARY KEY (stream_id, id)
);
CREATE INDEX workflow_stream_chunks_run_id_index ON workflow.workflow_stream_chunks (run_id);

-- Wait rows are keyed <run_id>-<correlation_id>.
CREATE TABLE workflow.workflow_waits (
    wait_id      varchar   NOT NULL,
    run_id       varchar   NOT NULL,
    status       workflow.wait_status NOT NULL,
    resume_at    timestamp,
    completed_at timestamp,
    created_at   timestamp NOT NULL DEFAULT now(),
    updated_at   timestamp NOT NULL DEFAULT now(),
    spec_version integer,
    CONSTRAINT workflow_waits_pkey PRIMARY KEY (wait_id)
);
CREATE INDEX workflow_waits_run_id_index ON workflow.workflow_waits (run_id);

-- drizzle's migrator bookkeeping, exactly as its migrate() creates it.
CREATE TABLE workflow_drizzle.workflow_migrations (
    id         SERIAL PRIMARY KEY,
    hash       text NOT NULL,
    created_at bigint
);
