-- touched_runs: runs with any change since the last incremental pass, the scope of the next
-- one. A change is: an event, or a run / step / wait / hook row created (DB clock) or
-- updated (JS clock, minus a skew margin). Torn writes change a row WITHOUT an event, hence
-- the row predicates. Events are found through the key when their ids carry time: beta.29's
-- wevt_<ULID> ids (JS clock) make `id >= 'wevt_' || <ULID time of the watermark - skew>` a
-- range scan of the primary key (event_id_floor); slot-era ids do not, so there
-- (event_id_floor NULL) created_at is read, a sequential scan.
-- Run rows are read for the runs live now or live at the last pass (was_live): the world
-- changes a run row only while the run is live, and a run created since then is live or
-- has events. Steps are read for live runs only (through the status and run_id indexes,
-- not a scan of every step ever run): a step row is created and changed only while its run is live (the
-- world refuses step events on a terminal run), and a run that ended since the watermark
-- is touched by its terminal event or its run row. Waits exist for live runs only.
-- params: verified_to (timestamp, DB clock), verified_to_utc (timestamp, UTC), skew
--         (interval), event_id_floor (text or NULL), was_live (text[])
SELECT e.run_id FROM workflow.workflow_events e
WHERE (%(event_id_floor)s::text IS NOT NULL AND e.id >= %(event_id_floor)s::text)
   OR (%(event_id_floor)s::text IS NULL AND e.created_at >= %(verified_to)s::timestamp)
UNION
SELECT r.id FROM workflow.workflow_runs r
WHERE (r.status IN ('pending', 'running') OR r.id = ANY (%(was_live)s::text[]))
  AND (r.created_at >= %(verified_to)s::timestamp
       OR r.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval)
UNION
SELECT s.run_id FROM workflow.workflow_steps s
JOIN workflow.workflow_runs l ON l.id = s.run_id AND l.status IN ('pending', 'running')
WHERE s.created_at >= %(verified_to)s::timestamp
   OR s.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval
UNION
SELECT w.run_id FROM workflow.workflow_waits w
WHERE w.created_at >= %(verified_to)s::timestamp
   OR w.updated_at >= %(verified_to_utc)s::timestamp - %(skew)s::interval
UNION
SELECT h.run_id FROM workflow.workflow_hooks h
WHERE h.created_at >= %(verified_to)s::timestamp;
