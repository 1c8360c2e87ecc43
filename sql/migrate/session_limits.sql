-- session_limits: set this session's statement and lock timeouts (text such as '1000ms';
-- '0' disables), e.g. statement_timeout off for the concurrent build only.
-- params: %(statement_timeout)s text, %(lock_timeout)s text
SELECT set_config('statement_timeout', %(statement_timeout)s, false),
       set_config('lock_timeout', %(lock_timeout)s, false);
