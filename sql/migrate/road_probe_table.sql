-- road_probe_table: an empty temporary copy of a table's columns, inside a transaction that
-- is always rolled back, to learn how the server prints an index the package's SQL defines
-- (pg_get_indexdef): the road compares that with the live index instead of guessing from text.
-- Takes ACCESS SHARE on the source table for the moment of the copy.
-- params: {table} identifier
CREATE TEMPORARY TABLE wfctl_road_probe (LIKE {table}) ON COMMIT DROP;
