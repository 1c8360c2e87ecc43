-- insert_events_with_ids: append several events with ids chosen by the writer (wevt_ ULIDs
-- minted in order for a legacy run, or evnt_...01.. for the first events of a freshly marked
-- run) in ONE statement. Guard: no event of the run may already hold an id at or after the
-- first new id (the log is read in id order; a writer with a clock ahead of ours must not be
-- overtaken). The guard raises (its message starts with `wfctl guard`) instead of inserting
-- nothing, so a pipelined transaction aborts whole; the caller re-reads and retries. The cast
-- depends on a column, so the planner cannot fold it into an error at plan time.
-- No ON CONFLICT: a duplicate creation event raises unique_violation (AlreadyExists).
-- params: run_id, ids[], types[], correlation_ids[], payloads[], spec_versions[], min_id
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
SELECT e.id, e.type, e.correlation_id, %(run_id)s::varchar, e.payload_cbor, e.spec_version
FROM unnest(%(ids)s::varchar[], %(types)s::varchar[], %(correlation_ids)s::varchar[],
            %(payloads)s::bytea[], %(spec_versions)s::int[])
     WITH ORDINALITY AS e(id, type, correlation_id, payload_cbor, spec_version, n)
WHERE coalesce((
        SELECT ('wfctl guard: run already has event ' || g.id || ' at or after the new ids')::int
        FROM workflow.workflow_events g
        WHERE g.run_id = %(run_id)s::varchar AND g.id >= %(min_id)s::varchar
        LIMIT 1), 1) = 1
ORDER BY e.n
RETURNING id, created_at;
