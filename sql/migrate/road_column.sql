-- road_column: whether a column exists (the road's add-column step is done once it does).
-- Read before every attempt, so a rerun after any interruption skips a column already added.
-- params: %(table)s text (schema-qualified), %(column)s text
SELECT EXISTS (
    SELECT 1
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = to_regclass(%(table)s)
      AND a.attname = %(column)s
      AND a.attnum > 0
      AND NOT a.attisdropped
) AS present;
