-- plan: what a gc with this cutoff would delete, counted set-wise in one READ ONLY
-- statement (the dry run). Same candidate predicate as candidates.sql. Deferrals (a retained
-- hook token, a locked job, a locked run row) are decided per batch at apply time.
-- params: cutoff (timestamp)
WITH cand AS MATERIALIZED (
    SELECT r.id, coalesce(r.completed_at, r.updated_at) AS done_at, r.status
    FROM workflow.workflow_runs r
    WHERE r.status IN ('completed', 'failed', 'cancelled')
      AND coalesce(r.completed_at, r.updated_at) < %(cutoff)s::timestamp
)
SELECT (SELECT count(*) FROM cand) AS runs,
       (SELECT count(*) FROM cand WHERE status = 'completed') AS completed,
       (SELECT count(*) FROM cand WHERE status = 'failed') AS failed,
       (SELECT count(*) FROM cand WHERE status = 'cancelled') AS cancelled,
       (SELECT min(done_at) FROM cand) AS oldest,
       (SELECT max(done_at) FROM cand) AS newest,
       (SELECT count(*) FROM workflow.workflow_events e WHERE e.run_id IN (SELECT id FROM cand))
           AS events,
       (SELECT count(*) FROM workflow.workflow_steps s WHERE s.run_id IN (SELECT id FROM cand))
           AS steps,
       (SELECT count(*) FROM workflow.workflow_waits w WHERE w.run_id IN (SELECT id FROM cand))
           AS waits,
       (SELECT count(*) FROM workflow.workflow_hooks h WHERE h.run_id IN (SELECT id FROM cand))
           AS hooks,
       (SELECT count(*) FROM workflow.workflow_stream_chunks c
        WHERE c.run_id IN (SELECT id FROM cand)) AS stream_chunks;
