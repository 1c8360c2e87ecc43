"""`wfctl worker --metrics-port`: a real worker process serves Prometheus metrics that count
what it did and read the queue and the runs from the database."""

from __future__ import annotations

import socket
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.worker import flows
from tests.worker.conftest import prepare, start, statuses, wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> dict[str, Any]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict[str, Any], sample: str, **labels: str) -> float:
    for family in families.values():
        for s in family.samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    raise AssertionError(f"no sample {sample} {labels}")


def test_worker_metrics_endpoint(beta_world: Any, workers: Any) -> None:
    prepare(beta_world)
    port = _free_port()
    with beta_world.connect() as conn:
        # a run of a workflow this worker does not serve: ready, never claimed
        conn.execute(
            "INSERT INTO wfctl.run_queue (run_id, workflow_name, ready_at)"
            " VALUES ('wrun_NOT_SERVED', 'elsewhere//wf', now() - interval '1 hour')"
        )
        w = workers(beta_world.dsn, "--metrics-port", str(port), "--metrics-addr", "127.0.0.1")
        w.worker_id()
        runs = [start(conn, flows.chain, f"m{i}", 3) for i in range(2)]
        wait_until(
            lambda: set(statuses(conn, runs).values()) == {"completed"}, 60, "the runs to end"
        )
    families = _scrape(port)
    assert _value(families, "wfctl_worker_steps_total", outcome="ok") == 6
    assert _value(families, "wfctl_worker_step_duration_seconds_count") == 6
    labels = {"workflow": flows.chain.name, "step": flows.work.name}
    assert _value(families, "wfctl_worker_steps_total", outcome="ok", **labels) == 6
    assert _value(families, "wfctl_worker_step_duration_seconds_count", **labels) == 6
    assert _value(families, "wfctl_worker_replays_total") >= 2
    assert _value(families, "wfctl_worker_lease_expiries_total") == 0
    assert _value(families, "wfctl_worker_scrape_ok") == 1
    assert _value(families, "wfctl_runs", status="completed") == 2
    assert _value(families, "wfctl_queue_runs", queue="default", state="ready") == 1
    assert _value(families, "wfctl_queue_oldest_ready_age_seconds", queue="default") >= 3600
    assert w.term() == 0
