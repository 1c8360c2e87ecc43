-- WF152 candidates: a wait_completed whose payload is not byte-for-byte its wait_created's
-- (upstream rule wait.resume-at-stable). Python (wfctl/doctor/wf152.py) decodes both and
-- reports the waits whose wait_completed carries a resumeAt that differs from wait_created's
-- (compared in whole milliseconds, as the runtime does).
-- Core beta.39 copies resumeAt from the wait_created event into wait_completed, and its sleep
-- consumer fails the replay (ReplayDivergenceError; the run ends failed, CORRUPTED_EVENT_LOG)
-- when the two differ by even 1 ms. So
-- only another writer makes them differ: a hand-written or tool-written wait_completed that
-- took the wait row's resume_at (WF153) or a recomputed deadline. A wait_completed without
-- a payload (resumeAt omitted, which the runtime accepts) is not a candidate.
-- Age: the wait_completed's created_at (DB default) -> localtimestamp.
-- Columns: the five finding columns (detail left to Python), then both payloads.
-- params: live_only, run_ids, since, min_age.
-- Performance: the equal-bytes case (every package-written pair) is settled in SQL, so
-- Python decodes only real candidates; the wait_created is found through the partial
-- unique index (run_id, correlation_id, type).
WITH runs AS NOT MATERIALIZED (
    SELECT r.id
    FROM workflow.workflow_runs r
    WHERE (NOT %(live_only)s OR r.status IN ('pending', 'running'))
      AND (%(run_ids)s::text[] IS NULL OR r.id = ANY (%(run_ids)s::text[]))
      AND (%(since)s::interval IS NULL OR r.created_at >= localtimestamp - %(since)s::interval)
)
SELECT c.run_id,
       c.correlation_id AS entity_id,
       c.created_at::timestamptz AS observed_at,
       c.created_at >= localtimestamp - %(min_age)s::interval AS in_flight,
       NULL::text AS detail,
       w.payload_cbor AS created_payload,
       c.payload_cbor AS completed_payload
FROM runs r
JOIN workflow.workflow_events c ON c.run_id = r.id
JOIN workflow.workflow_events w
  ON w.run_id = c.run_id AND w.correlation_id = c.correlation_id AND w.type = 'wait_created'
WHERE c.type = 'wait_completed'
  AND c.payload_cbor IS NOT NULL
  AND w.payload_cbor IS NOT NULL
  AND c.payload_cbor <> w.payload_cbor
ORDER BY c.created_at;
