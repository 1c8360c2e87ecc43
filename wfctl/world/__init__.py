"""The world: what a `@workflow/world-postgres` database looks like, by era."""
