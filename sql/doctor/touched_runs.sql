-- touched_runs: runs with any change since the last incremental pass, the scope of the next
-- one. A change is: an event, or a run / step / wait / hook row created (DB clock) or
-- updated (JS clock, minus a skew margin). Torn writes change a row WITHOUT an event, hence
-- the row predicates.
-- `open`: the runs the world may still write to: live now, or live (or holding a pending /
-- running step) at the last pass (was_live, live_runs.sql). `fresh`: runs created since,
-- found through the primary key: run ids are wrun_<ULID> (JS clock), so
-- `id >= 'wrun_' || <ULID time of the watermark - skew>` is a range scan (run_id_floor).
-- Events: beta.29's wevt_<ULID> ids (JS clock) make `id >= 'wevt_' || <ULID time>` a range
-- scan of the primary key (event_id_floor), which sees an event of ANY run. Slot-era ids
-- carry no time (event_id_floor NULL): there the events of the open and fresh runs are
-- probed through the (run_id, id) key, created_at >= the watermark. No other run can have
-- had an event since: the package refuses events on an ended run (run_started ->
-- RunExpiredError, other terminal events, creations, attr_set -> EntityConflictError,
-- hook_received under the run's row lock) except a step closing out and the events of a
-- legacy-spec run (both kept open by live_runs.sql) and a repeated run_cancelled (which no
-- check reports). A run that ended since the watermark is open (it was live) or fresh.
-- Run rows, steps and waits are read for the open and fresh runs only (the world changes
-- them only while the run is live or a step is open, as above); hooks by creation time.
-- params: verified_to (timestamp, DB clock), verified_to_utc (timestamp, UTC), skew
--         (interval), event_id_floor (text or NULL), run_id_floor (text), was_live (text[])
WITH open AS (
    SELECT r.id FROM workflow.workflow_runs r WHERE r.status IN ('pending', 'running')
    UNION
    SELECT unnest(%(was_live)s::text[])
),
fresh AS (
    SELECT r.id FROM workflow.workflow_runs r WHERE r.id >= %(run_id_floor)s::text
),
candidates AS (
    SELECT id FROM open UNION SELECT id FROM fresh
)
SELECT e.run_id FROM workflow.workflow_events e
WHERE %(event_id_floor)s::text IS NOT NULL AND e.id >= %(event_id_floor)s::text
UNION
SELECT c.id
FROM candidates c
CROSS JOIN LATERAL (  -- a probe of the run's key per candidate, never a scan of the events
    SELECT 1 FROM workflow.workflow_events e
    WHERE e.run_id = c.id AND e.created_at >= %(verified_to)s::timestamp
    LIMIT 1
) new_event
WHERE %(event_id_floor)s::text IS NULL
UNION
SELECT id FROM fresh
UNION
SELECT r.id FROM workflow.workflow_runs r
WHERE r.id IN (SELECT id FROM open)
  AND (r.created_at >= %(verified_to)s::timestamp
       OR r.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval)
UNION
SELECT s.run_id FROM workflow.workflow_steps s
WHERE s.run_id IN (SELECT id FROM candidates)
  AND (s.created_at >= %(verified_to)s::timestamp
       OR s.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval)
UNION
SELECT w.run_id FROM workflow.workflow_waits w
WHERE w.created_at >= %(verified_to)s::timestamp
   OR w.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval
UNION
SELECT h.run_id FROM workflow.workflow_hooks h
WHERE h.created_at >= %(verified_to)s::timestamp;
