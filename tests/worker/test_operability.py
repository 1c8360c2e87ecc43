"""Operating a worker: `wfctl worker MODULE -v` (the flag after the command), structured
logs (`--log-format json`: one JSON object per line through logging, with the worker's id and
the run's id), and `--otel` spans (a drive span naming the workflow, a span per step)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.worker import clientflows as cf
from tests.worker.conftest import WorkerProc, prepare, statuses, wait_until
from wfctl.runtime import Client

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("pythonjsonlogger")


def test_worker_verbose_json_logs_and_spans(
    beta_world: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(beta_world)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "orders")
    w = WorkerProc(
        beta_world.dsn,
        tmp_path / "worker.log",
        ["tests.worker.clientflows", "-v", "--log-format", "json", "--otel"],
    ).start()
    try:
        worker_id = w.worker_id()
        with Client(beta_world.dsn) as client:
            handle = client.enqueue(cf.doubled, 3)
            assert handle.result(timeout=30) == {"x": 3, "doubled": 6}
        with beta_world.connect() as conn:
            wait_until(lambda: statuses(conn, [handle.id]) == {handle.id: "completed"}, 10, "end")
        assert w.term() == 0
    finally:
        if w.alive():
            w.kill()
    lines = [json.loads(line) for line in w.log().splitlines() if line.strip()]
    logs = [x for x in lines if "level" in x]
    spans = [x for x in lines if "context" in x and "attributes" in x]
    assert logs and all({"timestamp", "level", "logger", "message"} <= set(x) for x in logs)
    serving = next(i for i, x in enumerate(logs) if "serving queue" in x["message"])
    assert all(x.get("worker_id") == worker_id for x in logs[serving:])
    drive_lines = [x for x in logs if x.get("run_id") == handle.id]
    assert drive_lines and {x["level"] for x in drive_lines} == {"DEBUG"}  # -v: per drive
    drives = [s for s in spans if s["name"] == "wfctl.run.drive"]
    assert drives and drives[0]["attributes"]["wfctl.workflow"] == cf.doubled.name
    assert drives[0]["attributes"]["wfctl.run_id"] == handle.id
    assert drives[0]["resource"]["attributes"]["service.name"] == "orders"
    steps = [s for s in spans if s["name"] == "wfctl.step"]
    assert [s["attributes"]["wfctl.step_name"] for s in steps] == [cf.double.name]


def test_run_json_logs(beta_world: Any, run_cli: Any) -> None:
    """`wfctl run --log-format json`: its messages as JSON lines on stderr, data on stdout."""
    status, out, err = run_cli(
        "--dsn", beta_world.dsn, "run", "tests.worker.clientflows:waiting", '["tok-log"]',
        "--log-format", "json",
    )  # fmt: skip
    assert status == 0, err
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    hooked = [r for r in records if "waits for hook token" in r["message"]]
    assert hooked and hooked[0]["level"] == "INFO" and hooked[0]["run_id"] in out
