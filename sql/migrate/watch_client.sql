-- watch_client: have the server notice within a second that wfctl went away (SIGKILL, lost
-- network) and abort the running statement, so a killed build leaves an INVALID index to
-- rebuild and releases the single-flight lock, instead of running on orphaned. PostgreSQL 14+.
SELECT set_config('client_connection_check_interval', '1000', false);
