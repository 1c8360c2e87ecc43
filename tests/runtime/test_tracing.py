"""OpenTelemetry spans of the runtime (opentelemetry-sdk, exporting to memory)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from tests import realworld as rw
from tests.conftest import node_available
from tests.otel import memory_exporter
from tests.realworld import read_back
from tests.runtime import flows
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    """One provider per process (OpenTelemetry allows setting it once): tests/otel.py."""
    exporter: InMemorySpanExporter = memory_exporter()
    return exporter


def test_run_and_step_spans(spans: InMemorySpanExporter, conn: Any, store: Any) -> None:
    spans.clear()
    ex = Executor(flows.wf, store)
    ok = create(flows.sequential, [3], conn=conn).run_id
    assert ex.drive(ok, timeout=10).status == "completed"
    bad = create(flows.failing, ["t"], conn=conn).run_id
    ex.drive(bad, wait=True, timeout=10)
    ex.close()
    finished = spans.get_finished_spans()
    drives = [s for s in finished if s.name == "wfctl.run.drive"]
    steps = [s for s in finished if s.name == "wfctl.step"]
    mine = [s for s in steps if s.parent and s.parent.span_id == drives[0].context.span_id]
    assert drives[0].attributes["wfctl.run_id"] == ok
    assert drives[0].attributes["wfctl.run_status"] == "completed"
    assert [s.attributes["wfctl.step_name"] for s in mine] == [flows.add.name] * 3
    errors = [s for s in steps if s.status.status_code is trace.StatusCode.ERROR]
    assert errors and all(s.events and s.events[0].name == "exception" for s in errors)


def test_no_span_is_started_while_no_provider_is_set() -> None:
    """Without a TracerProvider (OpenTelemetry's proxy: spans that record nothing) `span`
    starts none; once one is set, spans start (checked in a fresh process, since a provider
    can be set only once per process)."""
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from wfctl.runtime import tracing\n"
        "with tracing.span('wfctl.step') as before:\n"
        "    assert before is None, before\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "with tracing.span('wfctl.step') as after:\n"
        "    assert after is not None and after.is_recording(), after\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _carrier(conn: Any, run_id: str) -> Any:
    from wfctl.runtime import tracing

    return tracing.stored_carrier(conn, run_id)


def test_enqueue_stores_the_trace_context_and_the_drive_continues_it(
    spans: InMemorySpanExporter, conn: Any, store: Any
) -> None:
    """request -> wfctl.run.enqueue -> wfctl.run.drive -> wfctl.step, one trace id."""
    spans.clear()
    with trace.get_tracer("test").start_as_current_span("POST /orders") as request:
        run_id = create(flows.sequential, [2], conn=conn).run_id
    carrier = _carrier(conn, run_id)
    assert carrier is not None and carrier["traceparent"].startswith("00-")
    ex = Executor(flows.wf, store)
    assert ex.drive(run_id, timeout=10).status == "completed"  # outside the request's span
    ex.close()
    by_name = {s.name: s for s in spans.get_finished_spans()}
    enqueue, drive = by_name["wfctl.run.enqueue"], by_name["wfctl.run.drive"]
    trace_id = request.get_span_context().trace_id
    assert enqueue.parent is not None and enqueue.parent.span_id == request.context.span_id
    assert enqueue.attributes["wfctl.run_id"] == run_id
    assert drive.context.trace_id == trace_id
    assert drive.parent is not None and drive.parent.span_id == enqueue.context.span_id
    steps = [s for s in spans.get_finished_spans() if s.name == "wfctl.step"]
    assert steps and all(s.parent and s.parent.span_id == drive.context.span_id for s in steps)
    assert carrier["traceparent"].split("-")[1] == f"{trace_id:032x}"


def test_an_explicit_traceparent_is_the_parent(
    spans: InMemorySpanExporter, conn: Any, store: Any
) -> None:
    spans.clear()
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    run_id = create(flows.sequential, [1], conn=conn, traceparent=parent, tracestate="k=v").run_id
    (enqueue,) = [s for s in spans.get_finished_spans() if s.name == "wfctl.run.enqueue"]
    assert f"{enqueue.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert enqueue.parent is not None and f"{enqueue.parent.span_id:016x}" == "b7ad6b7169203331"
    assert _carrier(conn, run_id)["tracestate"] == "k=v"
    # An invalid traceparent is ignored (W3C): a new trace, nothing refused.
    spans.clear()
    other = create(flows.sequential, [1], conn=conn, traceparent="00-zz-bad-01").run_id
    (enqueue,) = [s for s in spans.get_finished_spans() if s.name == "wfctl.run.enqueue"]
    assert enqueue.parent is None and _carrier(conn, other) is not None


def test_without_a_provider_the_explicit_or_current_context_is_stored(
    conn: Any, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wfctl.runtime import tracing

    monkeypatch.setattr(tracing, "enabled", lambda: False)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    run_id = create(flows.sequential, [1], conn=conn, traceparent=parent).run_id
    assert _carrier(conn, run_id) == {"traceparent": parent}
    plain = create(flows.sequential, [1], conn=conn).run_id
    assert _carrier(conn, plain) is None
    assert tracing.traceparent_carrier("00-" + "0" * 32 + "-b7ad6b7169203331-01", None) is None
    assert tracing.traceparent_carrier("ff-" + "1" * 32 + "-b7ad6b7169203331-01", None) is None


@pytest.mark.skipif(not node_available(), reason="node/npm not found")
def test_the_node_package_reads_and_writes_the_same_carrier(
    spans: InMemorySpanExporter, conn: Any, store: Any
) -> None:
    """wfctl's carrier reads back through the real package (`runs.get`: executionContext
    .traceCarrier, where @workflow/core 5.0.0-beta.39's start() puts it); a run created
    through the package's write path with a carrier in that place is continued by a drive."""
    spans.clear()
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    ours = create(flows.sequential, [1], conn=conn, traceparent=parent).run_id
    got = read_back(conn.info.dsn, [ours])[ours]
    carrier = got["run"]["executionContext"]["traceCarrier"]
    assert carrier["traceparent"].split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"

    node_run = rw.new_run_id()
    context = {"traceCarrier": {"traceparent": parent}, "workflowCoreVersion": "5.0.0-beta.39"}
    inputs = serde.dumps([2], "the input")
    rw.RealWorld(conn.info.dsn).ok(
        [rw.run_created(node_run, flows.sequential.name, inputs, executionContext=context)]
    )
    spans.clear()
    ex = Executor(flows.wf, store)
    assert ex.drive(node_run, timeout=10).status == "completed"
    ex.close()
    (drive,) = [s for s in spans.get_finished_spans() if s.name == "wfctl.run.drive"]
    assert f"{drive.context.trace_id:032x}" == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert drive.parent is not None and f"{drive.parent.span_id:016x}" == "00f067aa0ba902b7"


def test_the_client_takes_the_context_as_an_option_or_from_the_callers_span(
    spans: InMemorySpanExporter, world: Any, conn: Any
) -> None:
    from wfctl.runtime import AsyncClient, Client

    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with Client(world.dsn) as client:
        by_name = client.enqueue(flows.sequential.name, 1, traceparent=parent)
        by_option = client.enqueue(flows.sequential.options(traceparent=parent), 1)
    for handle in (by_name, by_option):
        assert _carrier(conn, handle.id)["traceparent"].split("-")[1] == trace_id

    async def from_a_request() -> tuple[str, int]:
        with trace.get_tracer("web").start_as_current_span("GET /") as request:
            async with AsyncClient(world.dsn) as client:
                handle = await client.enqueue(flows.sequential, 1)
        return handle.id, request.get_span_context().trace_id

    run_id, request_trace = asyncio.run(from_a_request())
    assert _carrier(conn, run_id)["traceparent"].split("-")[1] == f"{request_trace:032x}"
