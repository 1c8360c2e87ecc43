"""What an operator follows a run by, across processes.

One trace from the request to the step: a `Client` in this process (spans to an in-memory
exporter) enqueues inside a request's span; a `wfctl worker --otel` subprocess (spans as JSON
lines on stderr: OTEL_TRACES_EXPORTER=console) drives the run. Its drive span is a child of
the enqueue span, its step spans children of the drive.

The user's `logging` in steps and workflows, through the worker, in text and JSON: INFO
kept, every record with the run, workflow, step and attempt; a workflow's line once, though
a later drive replays the code that logged it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.otel import memory_exporter
from tests.worker import clientflows as cf
from tests.worker.conftest import ROOT, prepare, wait_until
from wfctl.runtime import Client
from wfctl.runtime.engine import short_name

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace


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
    tracer = trace.get_tracer("shop.web")
    with tracer.start_as_current_span("POST /orders") as request, Client(beta_world.dsn) as c:
        handle = c.enqueue(cf.doubled, 21)
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


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_user_logging_carries_the_run(beta_world: Any, cworkers: Any, log_format: str) -> None:
    prepare(beta_world)
    worker = cworkers(beta_world.dsn, "--log-format", log_format)
    with Client(beta_world.dsn) as client:
        handle = client.enqueue(cf.logged, "o-7")
        assert handle.result(timeout=30) == "o-7"

    def mine() -> list[str]:
        return [line for line in worker.log().splitlines() if "shop.orders" in line]

    wait_until(lambda: len(mine()) >= 5, 15, "the user's five records")
    workflow, step = short_name(cf.logged.name), short_name(cf.noisy.name)
    if log_format == "json":
        records = [json.loads(line) for line in mine()]
        assert [(r["level"], r["message"]) for r in records] == [
            ("INFO", "order o-7 placed"),
            ("INFO", "charging o-7"),
            ("WARNING", "provider down for o-7"),
            ("INFO", "charging o-7"),
            ("INFO", "order o-7 done"),
        ]
        assert {r["run_id"] for r in records} == {handle.id}
        assert {(r["queue"], r["worker_id"].split(":")[1]) for r in records} == {
            ("default", str(worker.pid))
        }
        assert {r["workflow"] for r in records} == {workflow}
        assert [r.get("attempt") for r in records] == [None, 1, 1, 2, None]
        assert {r["step"] for r in records if "step" in r} == {step}
        return
    assert mine() == [
        f"INFO shop.orders: order o-7 placed [run {handle.id} workflow {workflow}]",
        f"INFO shop.orders: charging o-7 [run {handle.id} workflow {workflow} step {step}"
        " attempt 1]",
        f"WARNING shop.orders: provider down for o-7 [run {handle.id} workflow {workflow}"
        f" step {step} attempt 1]",
        f"INFO shop.orders: charging o-7 [run {handle.id} workflow {workflow} step {step}"
        " attempt 2]",
        f"INFO shop.orders: order o-7 done [run {handle.id} workflow {workflow}]",
    ]


def test_wfctl_run_logs_the_users_records_with_the_run(beta_world: Any) -> None:
    """`wfctl run --wait` (the run driven in the command's process): the same records, at
    --log-level (WARNING keeps the warning only)."""
    prepare(beta_world)
    done = subprocess.run(
        [sys.executable, "-m", "wfctl", "--dsn", beta_world.dsn, "run",
         "tests.worker.clientflows:logged", '["o-8"]', "--wait", "--log-format", "json",
         "--log-level", "warning"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(x) for x in done.stderr.splitlines() if '"shop.orders"' in x]
    assert [(r["level"], r["message"], r["attempt"]) for r in records] == [
        ("WARNING", "provider down for o-8", 1)
    ]
    assert records[0]["run_id"].startswith("wrun_")
    assert records[0]["step"] == short_name(cf.noisy.name)
    bad = subprocess.run(
        [sys.executable, "-m", "wfctl", "--dsn", beta_world.dsn, "run",
         "tests.worker.clientflows:logged", '["o-9"]', "--log-level", "loud"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 64 and "--log-level" in bad.stderr
