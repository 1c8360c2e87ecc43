-- road_marker_write: note where the road stands (target, migration, step), as the comment of
-- drizzle's bookkeeping table; read back by `wfctl migrate status` and `wfctl info` after an
-- interruption. COMMENT takes SHARE UPDATE EXCLUSIVE on that small table only.
-- params: {marker} literal (text; NULL clears it)
COMMENT ON TABLE workflow_drizzle.workflow_migrations IS {marker};
