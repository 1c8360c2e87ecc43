-- Whether the prebuilt run-scoped key index exists and is INVALID (a failed CONCURRENTLY
-- build leaves it so); used to say "an INVALID index was left" only when one was.
SELECT EXISTS (
    SELECT 1
    FROM pg_index i
    WHERE i.indexrelid = to_regclass('workflow.workflow_events_run_id_id_idx')
      AND NOT i.indisvalid
) AS invalid;
