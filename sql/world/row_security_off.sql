-- row_security_off: PostgreSQL's own guard against reads filtered by row-level security, for
-- the session (World.guard arms it only where no RLS applies to the role: owners, BYPASSRLS,
-- tables without policies). With row_security = off, a query that a policy would filter fails
-- ("query would be affected by row-level security policy for table ...", SQLSTATE 42501)
-- instead of returning fewer rows: a policy created after wfctl looked is an error, not a
-- world that seems to miss events.
SELECT set_config('row_security', 'off', false);
