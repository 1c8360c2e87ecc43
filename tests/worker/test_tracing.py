"""One trace from the request to the step, across processes: a `Client` in this process
(spans to an in-memory exporter) enqueues inside a request's span; a `wfctl worker --otel`
subprocess (spans as JSON lines on stderr: OTEL_TRACES_EXPORTER=console) drives the run. Its
drive span is a child of the enqueue span, its step spans children of the drive."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.otel import memory_exporter
from tests.worker import clientflows as cf
from tests.worker.conftest import prepare, wait_until
from wfctl.runtime import Client

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402


def _spans(log: str) -> list[dict[str, Any]]:
    out = []
    for line in log.splitlines():
        if line.startswith("{") and '"context"' in line:
            out.append(json.loads(line))
    return out


def _hex(value: int, width: int) -> str:
    return f"0x{value:0{width}x}"


def test_one_trace_from_the_request_to_the_worker_steps(
    beta_world: Any, cworkers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(beta_world)
    spans = memory_exporter()
    spans.clear()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    worker = cworkers(beta_world.dsn, "--otel")
    worker.worker_id()
    with trace.get_tracer("shop.web").start_as_current_span("POST /orders") as request:
        with Client(beta_world.dsn) as client:
            handle = client.enqueue(cf.doubled, 21)
    assert handle.result(timeout=30) == {"x": 21, "doubled": 42}

    (enqueue,) = [s for s in spans.get_finished_spans() if s.name == "wfctl.run.enqueue"]
    assert enqueue.parent is not None and enqueue.parent.span_id == request.context.span_id
    trace_id = _hex(request.get_span_context().trace_id, 32)

    def drive_exported() -> bool:
        return any(s["name"] == "wfctl.run.drive" for s in _spans(worker.log()))

    wait_until(drive_exported, 15, "the worker's drive span")
    theirs = [s for s in _spans(worker.log()) if s["context"]["trace_id"] == trace_id]
    (drive,) = [s for s in theirs if s["name"] == "wfctl.run.drive"]
    assert drive["parent_id"] == _hex(enqueue.context.span_id, 16)
    assert drive["attributes"]["wfctl.run_id"] == handle.id
    steps = [s for s in theirs if s["name"] == "wfctl.step"]
    assert [s["attributes"]["wfctl.step_name"] for s in steps] == [cf.double.name]
    assert all(s["parent_id"] == drive["context"]["span_id"] for s in steps)
