-- inbox_keep: keep a delivery whose hook does not exist yet, until now() + keep; deliveries
-- already past their expiry are deleted first (the table holds only live ones, bounded).
-- params: token, payload, keep_seconds
WITH expired AS (
    DELETE FROM wfctl.hook_inbox WHERE expires_at <= now()
)
INSERT INTO wfctl.hook_inbox (token, payload, expires_at)
VALUES (%(token)s, %(payload)s, now() + make_interval(secs => %(keep_seconds)s))
RETURNING expires_at;
