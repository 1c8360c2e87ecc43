-- road_table: whether a table exists (the road's create-table step is done once it does).
-- params: %(table)s text (schema-qualified)
SELECT to_regclass(%(table)s) IS NOT NULL AS present;
