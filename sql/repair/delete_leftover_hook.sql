-- delete_leftover_hook: WF104's repair for a hook row of a finished run: delete it, exactly as
-- the run's end does (beta.29: every hook of the run; slot era: those whose retention ended).
-- Guarded: only while the run is still terminal and the retention (if any) has ended.
-- params: run_id, hook_id
DELETE FROM workflow.workflow_hooks h
USING workflow.workflow_runs r
WHERE h.run_id = %(run_id)s AND h.hook_id = %(hook_id)s AND r.id = h.run_id
  AND r.status IN ('completed', 'failed', 'cancelled')
  AND coalesce((to_jsonb(h) ->> 'token_retention_until')::timestamptz, '-infinity') <= now()
RETURNING h.hook_id, h.token;
