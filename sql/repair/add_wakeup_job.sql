-- add_wakeup_job: enqueue one wake-up for a run in the package's own job format (reference
-- §5.2): payload {attempt, messageId, id: <workflow name>, data: base64 of the JSON body}.
-- `translate` strips the line breaks Postgres' base64 inserts every 76 characters: the world
-- validates `data` with zod's base64(), which rejects them. Key = the message id, as the
-- world's own key-less messages; 3 attempts as beta.29. Due now, or at run_at (a carried
-- run's retired steps job keeps its time). Built by wfctl/ops/wakeup.py only.
-- params: task, message_id, workflow_name, body (text JSON), max_attempts, run_at (or NULL)
SELECT (graphile_worker.add_job(
    %(task)s::text,
    json_build_object(
        'attempt', 1,
        'messageId', %(message_id)s::text,
        'id', %(workflow_name)s::text,
        'data', translate(encode(convert_to(%(body)s::text, 'UTF8'), 'base64'), E'\n', '')
    ),
    run_at => coalesce(%(run_at)s::timestamptz, now()),
    job_key => %(message_id)s::text,
    max_attempts => %(max_attempts)s::int
)).id;
