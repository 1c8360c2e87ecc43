-- watermark_write: record a pass (its flagged runs are replaced by flagged_replace).
-- params: scope, verified_to, verified_to_utc, full_pass (bool), version
INSERT INTO wfctl.doctor_watermark AS w
    (scope, verified_to, verified_to_utc, full_pass_at, wfctl_version)
VALUES (%(scope)s, %(verified_to)s, %(verified_to_utc)s, now(), %(version)s)
ON CONFLICT (scope) DO UPDATE
SET verified_to = excluded.verified_to, verified_to_utc = excluded.verified_to_utc,
    full_pass_at = CASE WHEN %(full_pass)s THEN now() ELSE w.full_pass_at END,
    updated_at = now(), wfctl_version = excluded.wfctl_version;
