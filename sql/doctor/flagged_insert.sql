-- flagged_insert: the runs of one kind recorded at this pass: 'finding' (re-checked next
-- time whether or not they change: a finding may clear by a deletion or age out of
-- in-flight) or 'live' (see watermark_ddl).
-- params: scope, kind, run_ids (text[])
INSERT INTO wfctl.doctor_flagged (scope, kind, run_id)
SELECT %(scope)s, %(kind)s, unnest(%(run_ids)s::text[])
ON CONFLICT DO NOTHING;
