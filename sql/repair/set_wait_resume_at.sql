-- set_wait_resume_at: WF153's repair, the wait row's resume_at set to the instant of its
-- wait_created (`epoch`, seconds). Shifting by a pure-seconds interval keeps the column's
-- own type (`timestamp` holding UTC wall time in beta.29, `timestamptz` in later worlds)
-- without depending on the session time zone. Guarded: only while the row still holds what
-- the repair read under lock (`expected`) and is still waiting.
-- params: run_id, correlation_id, epoch (numeric text), expected
UPDATE workflow.workflow_waits
SET resume_at = resume_at
        + make_interval(secs => (%(epoch)s::numeric - extract(epoch FROM resume_at))::float8)
WHERE wait_id = %(run_id)s || '-' || %(correlation_id)s
  AND resume_at = %(expected)s
RETURNING wait_id;
