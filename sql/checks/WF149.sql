-- WF149 candidates: runs whose attributes may differ from the fold of their log (upstream rule
-- run.attributes-match-log). Python (wfctl/doctor/wf149.py) decodes the payloads, folds them
-- and reports only the runs whose workflow_runs.attributes differ.
-- The fold: run_created's `attributes` (the row is inserted with them), then every attr_set's
-- `changes` in log order, a null value deleting the key. beta.29 writes attr_set as separate
-- autocommits (UPDATE the run's attributes, then insert the event), so a crash or a failed
-- insert between them leaves the row ahead of the log; a redelivery of the same workflow
-- write heals it, a run that ended first (cancelled, failed) keeps it.
-- Candidates: a run with non-empty attributes, an attr_set event, or a run_created payload
-- naming `attributes` (the CBOR text-string key 0x6a 'attributes'); a run with none of them
-- folds to {} and holds {}. Runs emptied by retention (expired_at) are skipped.
-- Age: the run's updated_at (JS clock; every attr_set UPDATE sets it) as an instant.
-- Columns: the five finding columns (detail left to Python), then the row's attributes and
-- the run_created / attr_set payloads in log order (created_at, id), with their types.
-- params: live_only, run_ids, since, min_age.
-- Performance: default scope reads the live runs' attr_set and run_created events through
-- the run_id index; --all reads those two event types once (one pass), never the payload of
-- a run that has no attribute at all.
WITH runs AS NOT MATERIALIZED (
    SELECT r.id, r.attributes, r.updated_at
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
      AND r.expired_at IS NULL
),
candidates AS (
    SELECT r.id FROM runs r WHERE r.attributes <> '{}'::jsonb
    UNION
    SELECT e.run_id
    FROM runs r
    JOIN workflow.workflow_events e ON e.run_id = r.id
    WHERE e.type = 'attr_set'
       OR (e.type = 'run_created'
           AND position('\x6a61747472696275746573'::bytea IN e.payload_cbor) > 0)
)
SELECT r.id AS run_id,
       'attributes' AS entity_id,
       to_timestamp(extract(epoch FROM r.updated_at)) AS observed_at,
       to_timestamp(extract(epoch FROM r.updated_at)) >= now() - %(min_age)s::interval
           AS in_flight,
       NULL::text AS detail,
       r.attributes,
       coalesce(l.types, '{}') AS types,
       coalesce(l.payloads, '{}') AS payloads
FROM candidates c
JOIN runs r ON r.id = c.id
LEFT JOIN LATERAL (
    SELECT array_agg(e.type::text ORDER BY e.created_at, e.id) AS types,
           array_agg(e.payload_cbor ORDER BY e.created_at, e.id) AS payloads
    FROM workflow.workflow_events e
    WHERE e.run_id = r.id AND e.type IN ('run_created', 'attr_set')
) l ON true
ORDER BY r.updated_at;
