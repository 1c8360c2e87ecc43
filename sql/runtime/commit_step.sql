-- commit_step: a sequential step's transaction after its guard, in ONE statement (a
-- data-modifying CTE) instead of three: the finished step's completion (complete_step_row and
-- complete_step_check), the next step's row (insert_step) and the events of both, through the
-- event writer's own INSERT (writer/insert_events_with_ids, included as it is: it also
-- refuses unseen events and taken positions). Same rows, same events, same errors as the
-- three statements sent in that order:
-- - the guard (runtime/guard_run, FOR KEY SHARE on the run row) stays a statement of its own,
--   sent before this one in the same implicit transaction: a statement's snapshot is taken
--   when it starts, so only a statement that starts after the lock was granted sees an event
--   that an external writer (`hooks resume`: FOR UPDATE on the run row, no change to it)
--   committed while we waited; in beta.29 worlds the guard's set_config(enable_seqscan) must
--   also precede this statement's planning;
-- - the one-time filter reads `done` (the completion's check: GuardError) and then `started`
--   (a second creation: workflow_steps_pkey) before the events CTE is read, so the errors
--   come in the order the separate statements raised them.
-- Returns the events' (id, created_at), as the writer's statement does.
-- params: done_step_id, output_cbor, run_id, step_id, step_name, input_cbor, spec_version,
--         ids[], types[], correlation_ids[], payloads[], spec_versions[], min_id
WITH u AS ({{runtime/complete_step_row step_id=done_step_id}}),
     done AS ({{runtime/complete_step_check step_id=done_step_id}}),
     started AS ({{runtime/insert_step}}),
     events AS ({{writer/insert_events_with_ids}})
SELECT e.id, e.created_at
FROM events e
WHERE (SELECT d.ok FROM done d) = 1 AND (SELECT count(*) FROM started) = 1;
