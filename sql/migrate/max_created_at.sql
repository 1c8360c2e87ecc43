-- max_created_at: what drizzle's migrator compares each journal `when` with: a migration is
-- applied iff its `when` exceeds this (reference §1.6). NULL on an empty table.
SELECT max(created_at) AS max_created_at FROM workflow_drizzle.workflow_migrations;
