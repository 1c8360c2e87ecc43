-- complete_step: step_completed's row change, guarded (not terminal, §3.4): raises unless
-- exactly one step row changed. Sent alone when the step's transaction has another shape than
-- commit_step's (which folds the same change with the next step's start and the events).
-- params: step_id, output_cbor
WITH u AS ({{runtime/complete_step_row}})
{{runtime/complete_step_check}};
