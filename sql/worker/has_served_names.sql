-- has_served_names: whether wfctl.workers records the workflows each worker serves (w0005).
SELECT EXISTS (
    SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass('wfctl.workers') AND attname = 'workflows' AND NOT attisdropped
);
