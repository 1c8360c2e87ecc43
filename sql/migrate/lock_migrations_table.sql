-- lock_migrations_table: inside the recording transaction, keep another migrator from
-- recording at the same time (it would read a stale max(created_at)). Conflicts with
-- INSERT but not with SELECT.
LOCK TABLE workflow_drizzle.workflow_migrations IN SHARE ROW EXCLUSIVE MODE;
