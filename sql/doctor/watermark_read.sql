-- watermark_read: the last incremental pass (no row when none; the caller checks the table
-- exists first), with the runs it flagged (findings) and the runs that were live then.
-- params: scope
SELECT w.verified_to, w.verified_to_utc, w.full_pass_at,
       coalesce((SELECT array_agg(f.run_id) FROM wfctl.doctor_flagged f
                 WHERE f.scope = w.scope AND f.kind = 'finding'), '{}') AS flagged,
       coalesce((SELECT array_agg(f.run_id) FROM wfctl.doctor_flagged f
                 WHERE f.scope = w.scope AND f.kind = 'live'), '{}') AS was_live
FROM wfctl.doctor_watermark w
WHERE w.scope = %(scope)s;
