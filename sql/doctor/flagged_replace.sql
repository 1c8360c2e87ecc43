-- flagged_replace: the runs with a finding at this pass (they are re-checked next time,
-- whether or not they change: a finding may clear by a deletion or age out of in-flight).
-- params: scope, run_ids (text[])
WITH gone AS (DELETE FROM wfctl.doctor_flagged WHERE scope = %(scope)s)
INSERT INTO wfctl.doctor_flagged (scope, run_id)
SELECT %(scope)s, unnest(%(run_ids)s::text[])
ON CONFLICT DO NOTHING;
