-- trace_carrier: a run's execution context, for the trace carrier a drive continues
-- (`executionContext.traceCarrier`: W3C traceparent/tracestate, written by wfctl's enqueue or
-- by @workflow/core's start()). The CBOR column (beta.29 on) first, the jsonb one of older rows.
-- params: run_id
SELECT r.execution_context_cbor, to_jsonb(r) -> 'execution_context' AS execution_context
FROM workflow.workflow_runs r
WHERE r.id = %(run_id)s;
