-- planned_expression: how the planner prints one boolean expression over a table's columns,
-- after constant folding. Used to compare two index predicates by meaning (the package's
-- own `type IN (...)` and its pg_dump/restore re-parse print differently but plan equally).
-- EXPLAIN without ANALYZE runs nothing: allowed in READ ONLY transactions and on standbys.
-- Composed by wfctl.world.catalog with psycopg.sql: expression = a predicate as the server
-- printed it (pg_get_indexdef) or as the expected catalog keeps it; table = the index's table.
EXPLAIN (VERBOSE, COSTS OFF) SELECT {expression} FROM ONLY {table}
