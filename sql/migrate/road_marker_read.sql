-- road_marker_read: where an unfinished `wfctl migrate --online --package` stopped, kept as
-- the comment of drizzle's bookkeeping table (no table of wfctl's own in the world, so the
-- catalog stays the package's). NULL: no road in progress.
SELECT CASE WHEN to_regclass('workflow_drizzle.workflow_migrations') IS NULL THEN NULL
            ELSE obj_description(to_regclass('workflow_drizzle.workflow_migrations'), 'pg_class')
       END AS marker;
