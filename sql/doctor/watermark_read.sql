-- watermark_read: the last incremental pass (NULL row when none; the caller checks the table
-- exists first), with the runs it flagged.
-- params: scope
SELECT w.verified_to, w.verified_to_utc, w.full_pass_at,
       coalesce((SELECT array_agg(f.run_id) FROM wfctl.doctor_flagged f
                 WHERE f.scope = w.scope), '{}') AS flagged
FROM wfctl.doctor_watermark w
WHERE w.scope = %(scope)s;
