-- commit_step_windowed: commit_step for a beta.29-shaped world (no (run_id, id) index on
-- events), whose event writer sends writer/insert_events_with_ids_windowed instead.
-- params: as commit_step
{{runtime/commit_step writer/insert_events_with_ids=writer/insert_events_with_ids_windowed}}
