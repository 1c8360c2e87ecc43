-- run_children_waiting: the children one run waits for (its `wfctl:child:` hooks with no
-- payload yet), with the child's run id inside the start_child step's output (children.py).
-- params: run_id
SELECT s.output_cbor
FROM workflow.workflow_hooks h
JOIN workflow.workflow_steps s
  ON s.step_id = split_part(h.token, ':', 4) AND s.run_id = h.run_id AND s.status = 'completed'
WHERE h.run_id = %(run_id)s AND h.token LIKE 'wfctl:child:%%'
  AND NOT EXISTS (
      SELECT 1 FROM workflow.workflow_events e
      WHERE e.correlation_id = h.hook_id AND e.run_id = h.run_id AND e.type = 'hook_received')
ORDER BY h.created_at;
