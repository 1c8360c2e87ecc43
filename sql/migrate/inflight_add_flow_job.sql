-- inflight_add_flow_job: the flow delivery that takes over a retired steps job, at the time the
-- steps job was due (a step's retry time is kept), in the package's own job format:
-- {attempt, messageId, id: <workflow name>, data: base64 of {"runId", "requestedAt"}}. The
-- replay then finds the step unfinished and runs it (the 5.0 cores run steps inside the flow
-- delivery). `translate` strips the line breaks Postgres' base64 inserts every 76 characters.
-- params: task, message_id, workflow_name, body (text JSON), run_at, max_attempts
SELECT (graphile_worker.add_job(
    %(task)s::text,
    json_build_object(
        'attempt', 1,
        'messageId', %(message_id)s::text,
        'id', %(workflow_name)s::text,
        'data', translate(encode(convert_to(%(body)s::text, 'UTF8'), 'base64'), E'\n', '')
    ),
    run_at => %(run_at)s::timestamptz,
    job_key => %(message_id)s::text,
    max_attempts => %(max_attempts)s::int
)).id;
