-- record_migration: one row as drizzle's migrator writes it (hash = SHA-256 of the .sql file,
-- created_at = the journal `when`), so the migrator treats the migration as applied.
-- params: %(hash)s text, %(created_at)s bigint
INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)
VALUES (%(hash)s, %(created_at)s);
