-- marker_has_seq_in_band: does the marker table carry the in-band writer fence of migration
-- 0026 (`workflow_event_slots.seq_in_band int NOT NULL DEFAULT 1`)? pg_catalog only.
SELECT EXISTS (
    SELECT 1
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'workflow' AND c.relname = 'workflow_event_slots'
      AND a.attname = 'seq_in_band' AND NOT a.attisdropped
) AS has_seq_in_band;
