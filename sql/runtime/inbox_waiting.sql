-- inbox_waiting: whether any live kept delivery waits for one of these tokens (checked after
-- a transaction that created hooks with them committed; see inbox_take).
-- params: tokens (text[])
SELECT EXISTS (
    SELECT 1 FROM wfctl.hook_inbox
    WHERE token = ANY (%(tokens)s::varchar[]) AND expires_at > now()
);
