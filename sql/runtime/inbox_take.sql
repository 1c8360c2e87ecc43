-- inbox_take: take (delete) the live kept deliveries of a token, oldest first, in the
-- transaction that appends them as hook_received: exactly once (a concurrent taker waits on
-- the row locks and then finds them gone). Only for a hook of a wfctl run (deployment
-- 'wfctl'): a token a Node run holds is not wfctl's to deliver; its kept rows expire.
-- params: token
DELETE FROM wfctl.hook_inbox i
WHERE i.token = %(token)s
  AND i.expires_at > now()
  AND EXISTS (
        SELECT 1 FROM workflow.workflow_hooks h
        JOIN workflow.workflow_runs r ON r.id = h.run_id
        WHERE h.token = i.token AND r.deployment_id = 'wfctl')
RETURNING i.id, i.payload;
