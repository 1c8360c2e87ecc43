"""OpenTelemetry spans of the runtime (opentelemetry-sdk, exporting to memory)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.runtime import flows
from wfctl.runtime.executor import Executor, create

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    """One provider per process (OpenTelemetry allows setting it once)."""
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
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
