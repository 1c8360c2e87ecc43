-- finish_run: a terminal run transition's row change (completed / failed / cancelled), guarded
-- (raises unless pending or running, §3.4). The waits and hooks of the run are deleted by
-- delete_run_waits / delete_run_hooks* in the same transaction, then the terminal event.
-- Release-neutral: `status` is sent untyped, so the server casts it to the column's own enum
-- (workflow.status, or public.status on 4.1.x); error_code (beta.29 on) is set apart by
-- set_run_error_code, only when there is one (4.x worlds have no such column).
-- It also notifies channel wfctl_run_end (payload: the run id): NOTIFY is transactional, so
-- a waiting client (RunHandle.result(), Client) hears of the end only once it is committed,
-- and a rolled-back attempt notifies nobody. Terminal transactions only, never per step.
-- params: run_id, status, output_cbor, error_cbor
WITH u AS (
    UPDATE workflow.workflow_runs
    SET status = %(status)s, output_cbor = %(output_cbor)s,
        error_cbor = %(error_cbor)s,
        completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'
    WHERE id = %(run_id)s AND status IN ('pending', 'running')
    RETURNING id)
SELECT CASE WHEN count(*) = 1 THEN 1
            ELSE ('wfctl guard: run ' || %(run_id)s::text || ' is already terminal (' || count(*) || ')')::int END,
       pg_notify('wfctl_run_end', %(run_id)s::text)
FROM u;
