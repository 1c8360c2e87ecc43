-- run_id_schemes: which id schemes a run's log already uses, and its newest legacy id.
-- A run keeps one scheme for life: an appended wevt_ id must sort after every wevt_ id of the
-- run (the log is read in id order), and a run with any evnt_ id must never get a wevt_ one.
-- params: run_id
SELECT coalesce(bool_or(left(id, 5) = 'evnt_'), false) AS has_slot_ids,
       coalesce(bool_or(left(id, 5) = 'wevt_'), false) AS has_legacy_ids,
       max(id) FILTER (WHERE left(id, 5) = 'wevt_') AS newest_legacy_id,
       count(*) AS events
FROM workflow.workflow_events
WHERE run_id = %(run_id)s;
