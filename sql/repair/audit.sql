-- audit: one row per applied repair, written in the repair's own transaction so the record
-- and the change commit (or vanish) together.
-- params: version, reason, code, run_id, entity_id, event_ids (text[]), details (jsonb)
INSERT INTO wfctl.repair_log (wfctl_version, reason, code, run_id, entity_id, event_ids, details)
VALUES (%(version)s, %(reason)s, %(code)s, %(run_id)s, %(entity_id)s, %(event_ids)s,
        %(details)s)
RETURNING id;
