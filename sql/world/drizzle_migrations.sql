-- drizzle_migrations: what the package's migrator recorded. drizzle applies a migration iff
-- its journal `when` exceeds max(created_at); hashes are never compared by it, but we do.
SELECT id, hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY created_at, id;
