"""`wfctl worker --metrics-port`: Prometheus metrics of one worker process.

Built on prometheus-client (the reference implementation of the exposition format, a
runtime dependency) with a registry of its own, so nothing else in the process leaks in.

Counted in the process: steps executed by outcome, workflow and step, step duration by
workflow and step, drives (each drive
replays the run's log from its first event: `replays`), runs this worker's recovery found
past their lease (`lease_expiries`). Read from the database at scrape time, on a fresh
connection bounded by the session's statement timeout: runs by status, queue depth per
state, and the age of the oldest ready run (how long work has waited, not just how much
there is). A failed read sets `wfctl_worker_scrape_ok 0` instead of failing the scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from wfctl import sql

STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
QUEUE_STATES = ("ready", "scheduled", "parked", "leased", "past_lease")


class WorkerMetrics:
    """The worker's instruments; `serve` exposes them on http://ADDR:PORT/metrics."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self.registry = CollectorRegistry()
        self.steps = Counter(
            "wfctl_worker_steps",
            "Step attempts executed by this worker, by outcome (ok / error), workflow and step.",
            ["outcome", "workflow", "step"],
            registry=self.registry,
        )
        self.step_seconds = Histogram(
            "wfctl_worker_step_duration_seconds",
            "Wall time of one step attempt's body, by workflow and step.",
            ["workflow", "step"],
            buckets=STEP_BUCKETS,
            registry=self.registry,
        )
        self.replays = Counter(
            "wfctl_worker_replays",
            "Drives of a run by this worker; each replays the run's log from its start.",
            registry=self.registry,
        )
        self.lease_expiries = Counter(
            "wfctl_worker_lease_expiries",
            "Runs this worker's recovery found past their lease and made ready again.",
            registry=self.registry,
        )
        self.registry.register(_WorldCollector(connect))

    def step(self, seconds: float, ok: bool, workflow: str, step: str) -> None:
        """One step attempt. Labels are the stored names (`workflow//py:module//function`,
        `step//py:...`): bounded by the code a worker serves, stable across deploys."""
        self.steps.labels(outcome="ok" if ok else "error", workflow=workflow, step=step).inc()
        self.step_seconds.labels(workflow=workflow, step=step).observe(seconds)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Start the HTTP endpoint in a daemon thread (prometheus-client's own server)."""
        start_http_server(port, addr=addr, registry=self.registry)


class _WorldCollector(Collector):
    """Gauges read from the database at scrape time."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self.connect = connect

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ok = GaugeMetricFamily(
            "wfctl_worker_scrape_ok", "1 when the database gauges below could be read."
        )
        try:
            with self.connect() as conn:
                statuses = conn.execute(sql.load("metrics/runs_by_status")).fetchall()
                queues = conn.execute(sql.load("worker/status_queues")).fetchall()
        except psycopg.Error:
            ok.add_metric([], 0)
            yield ok
            return
        ok.add_metric([], 1)
        yield ok
        runs = GaugeMetricFamily("wfctl_runs", "Runs in the world by status.", labels=["status"])
        for status, count in statuses:
            runs.add_metric([str(status)], float(count))
        yield runs
        depth = GaugeMetricFamily(
            "wfctl_queue_runs", "Runs in the worker queue by state.", labels=["queue", "state"]
        )
        oldest = GaugeMetricFamily(
            "wfctl_queue_oldest_ready_age_seconds",
            "How long the oldest ready (runnable, unleased) run has waited; 0 when none.",
            labels=["queue"],
        )
        for row in queues:
            queue = str(row[0])
            for state, value in zip(QUEUE_STATES, row[1:6], strict=True):
                depth.add_metric([queue, state], float(value))
            oldest.add_metric([queue], float(row[7] or 0.0))
        yield depth
        yield oldest
