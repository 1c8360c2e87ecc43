-- insert_events_with_ids_windowed: insert_events_with_ids for a world without a (run_id, id)
-- index (the beta.29 shape; slot-era worlds have it, and no index on id alone). Appends
-- several events with ids chosen by the writer (wevt_ ULIDs
-- minted in order for a legacy run, or evnt_...01.. for the first events of a freshly marked
-- run) in ONE statement. Guard: no event of the run may already hold an id at or after the
-- first new id (the log is read in id order; a writer with a clock ahead of ours must not be
-- overtaken). The guard raises (its message starts with `wfctl guard`) instead of inserting
-- nothing, so a pipelined transaction aborts whole; the caller re-reads and retries. The cast
-- depends on a column, so the planner cannot fold it into an error at plan time.
-- No ON CONFLICT: a duplicate creation event raises unique_violation (AlreadyExists).
-- The guard reads the events at or after min_id in id order from the primary key, at most 64
-- (any run's), and scans the run's own events only when that window is full: a beta.29-shape
-- world has no (run_id, id) index, and `run_id = $1 AND id >= $2` was planned as a scan of
-- all the run's events, growing with every step (see sql/runtime/unseen_events.sql).
-- params: run_id, ids[], types[], correlation_ids[], payloads[], spec_versions[], min_id
WITH next AS MATERIALIZED (
    SELECT g.id, g.run_id
    FROM workflow.workflow_events g
    WHERE g.id >= %(min_id)s::varchar
    ORDER BY g.id
    LIMIT 64)
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
SELECT e.id, e.type, e.correlation_id, %(run_id)s::varchar, e.payload_cbor, e.spec_version
FROM unnest(%(ids)s::varchar[], %(types)s::varchar[], %(correlation_ids)s::varchar[],
            %(payloads)s::bytea[], %(spec_versions)s::int[])
     WITH ORDINALITY AS e(id, type, correlation_id, payload_cbor, spec_version, n)
WHERE coalesce((
        SELECT ('wfctl guard: run already has event ' || g.id || ' at or after the new ids')::int
        FROM (SELECT n.id FROM next n WHERE n.run_id = %(run_id)s::varchar
              UNION ALL
              SELECT w.id FROM workflow.workflow_events w
              WHERE (SELECT count(*) FROM next) = 64
                AND w.run_id = %(run_id)s::varchar AND w.id >= %(min_id)s::varchar) g
        LIMIT 1), 1) = 1
ORDER BY e.n
RETURNING id, created_at;
