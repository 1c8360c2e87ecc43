-- hook_received_exists: has this hook received a payload? (a child's end is delivered once:
-- children.py). Index: workflow_events_correlation_id_index.
-- params: run_id, hook_id
SELECT EXISTS (
    SELECT 1 FROM workflow.workflow_events
    WHERE correlation_id = %(hook_id)s AND run_id = %(run_id)s AND type = 'hook_received'
);
