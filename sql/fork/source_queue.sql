-- source_queue: the queue a Python-runtime run was handed to, while it is still queued (the
-- row goes with the run's end; then the fork falls back to the default queue).
-- params: run_id
SELECT queue FROM wfctl.run_queue WHERE run_id = %(run_id)s;
