-- timestamp_type: whether the world's timestamp columns are `timestamptz` (upstream 0026
-- converts every one in one migration; workflow_runs.created_at stands for them all). The
-- runtime then sets its session's TimeZone to UTC (wfctl.runtime.store._set_clock).
-- params: none
SELECT coalesce(bool_or(data_type = 'timestamp with time zone'), false)
FROM information_schema.columns
WHERE table_schema = 'workflow' AND table_name = 'workflow_runs' AND column_name = 'created_at';
