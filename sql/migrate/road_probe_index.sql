-- road_probe_index: the definition the server prints for the probe index just created on the
-- probe table (see road_probe_table), read before the rollback.
SELECT pg_get_indexdef(to_regclass('pg_temp.wfctl_road_probe_idx')) AS definition;
