-- child_hooks_undelivered: parents waiting for a child (hooks with a `wfctl:child:` token, see
-- wfctl/runtime/children.py) that have not received the child's end, with the child's run id
-- (the result of the parent's start_child step, whose correlation id ends the token). The
-- child's own driver delivers its end right after its terminal transaction; this finds the
-- ones a crash in between (or a cancel from outside) left undelivered. Active hooks only: the
-- hooks table holds no ended run's rows.
-- params: limit
SELECT h.hook_id, h.run_id, h.token, s.output_cbor
FROM workflow.workflow_hooks h
JOIN workflow.workflow_steps s
  ON s.step_id = split_part(h.token, ':', 4) AND s.run_id = h.run_id AND s.status = 'completed'
WHERE h.token LIKE 'wfctl:child:%%'
  AND NOT EXISTS (
      SELECT 1 FROM workflow.workflow_events e
      WHERE e.correlation_id = h.hook_id AND e.run_id = h.run_id AND e.type = 'hook_received')
ORDER BY h.created_at
LIMIT %(limit)s;
