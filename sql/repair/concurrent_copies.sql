-- concurrent_copies: of the events this repair appended to a run (ids), those that another
-- event of the same type and entity now duplicates: a writer that was still open when the
-- repair re-checked committed the very event meanwhile. Read just before the repair commits,
-- after waiting for the writers that opened during it (runner._await_event_writers); any row
-- rolls the run's repair back. Only the event types a second copy breaks (creations and
-- terminal events: WF141's duplicates, the package's unique creation index).
-- params: run_id, ids
SELECT o.id, o.type, o.correlation_id, e.id AS other
FROM workflow.workflow_events o
JOIN workflow.workflow_events e
  ON e.run_id = o.run_id AND e.type = o.type
 AND e.correlation_id IS NOT DISTINCT FROM o.correlation_id AND e.id <> o.id
WHERE o.run_id = %(run_id)s
  AND o.id = ANY (%(ids)s::text[])
  AND o.type IN ('run_created', 'run_completed', 'run_failed', 'run_cancelled',
                 'step_created', 'step_completed', 'step_failed',
                 'wait_created', 'wait_completed', 'hook_created');
