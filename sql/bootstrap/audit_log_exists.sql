-- audit_log_exists: whether the repair audit log (wfctl.repair_log, revision w0001) is there;
-- read before and again under the schema lock by a first `repair --apply`.
SELECT to_regclass('wfctl.repair_log') IS NOT NULL;
