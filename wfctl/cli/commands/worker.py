"""`wfctl worker MODULE[:ATTR]` and `wfctl worker status`: run workflows from the queue."""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType
from typing import Annotated, Any

import psycopg
import typer

from wfctl.cli import logs
from wfctl.cli.app import State, app, state
from wfctl.cli.commands.run import load_registry, runtime_store
from wfctl.cli.output import Format
from wfctl.connection.db import connect, query_error, read_only
from wfctl.durations import parse_duration
from wfctl.errors import UsageError, WfctlError
from wfctl.runtime.registry import Workflows
from wfctl.signals import interruptible
from wfctl.worker import queue as q
from wfctl.worker.daemon import Worker, WorkerConfig


def _limits(values: list[str], registry: Workflows) -> dict[str, int]:
    limits: dict[str, int] = {}
    for value in values:
        name, sep, count = value.rpartition("=")
        if not sep or not name or not count.isdigit() or int(count) < 1:
            raise UsageError(f"--limit: expected WORKFLOW=N, got {value!r}", hint="e.g. checkout=2")
        try:
            wdef = registry.find(name)
        except LookupError as exc:
            raise UsageError(f"--limit: {exc}") from None
        limits[wdef.name] = int(count)
    return limits


@app.command("worker")
def worker_command(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="MODULE[:ATTR] | status",
            help="The workflows to serve (a module or file, optionally its registry), "
            "or `status` to show the workers and the queues.",
        ),
    ],
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Runs driven at once.")
    ] = 4,
    queue: Annotated[str, typer.Option("--queue", help="The queue to serve.")] = "default",
    limit: Annotated[
        list[str] | None,
        typer.Option(
            "--limit",
            metavar="WORKFLOW=N",
            help="At most N runs of WORKFLOW leased at once across all workers (repeatable).",
        ),
    ] = None,
    lease: Annotated[
        str, typer.Option("--lease", help="Lease timeout: a dead worker's runs move on after it.")
    ] = "15s",
    poll: Annotated[
        str, typer.Option("--poll", help="Idle polling interval when no NOTIFY arrives.")
    ] = "1s",
    allow_node_peer: Annotated[
        bool,
        typer.Option(
            "--allow-node-peer",
            help="Run even where a Node world's queue exists (a Node process starting "
            "on this database would fail every active Python run).",
        ),
    ] = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            min=1,
            max=65535,
            envvar="WFCTL_METRICS_PORT",
            help="Serve Prometheus metrics on http://ADDR:PORT/metrics.",
        ),
    ] = None,
    metrics_addr: Annotated[
        str, typer.Option("--metrics-addr", help="Address the metrics endpoint binds.")
    ] = "0.0.0.0",
    log_format: Annotated[
        str,
        typer.Option("--log-format", envvar="WFCTL_LOG_FORMAT", help=logs.LOG_FORMAT_HELP),
    ] = "text",
    log_level: Annotated[
        str,
        typer.Option("--log-level", envvar="WFCTL_LOG_LEVEL", help=logs.LOG_LEVEL_HELP),
    ] = "INFO",
    otel: Annotated[bool, typer.Option("--otel", help=logs.OTEL_HELP)] = False,
) -> None:
    """Run workflows from the queue, or (`status`) show workers and queues.

    A long-running process that leases ready runs of the workflows MODULE defines from the
    queue in Postgres (schema wfctl) and drives them: several workers on one or many hosts
    share the work, a run executes on one worker at a time, and a dead worker's runs move to
    another one after --lease. Runs get there with `wfctl run --detach`; hook payloads and
    due timers make them ready again. SIGTERM/SIGINT: finish the current steps, hand the
    runs back, exit 0 (a second signal exits at once); SIGKILL is safe.

    `wfctl worker status` lists the live workers (host, pid, started, runs held, last
    heartbeat), the depth of each queue, its oldest ready run, the runs past their lease, and
    ready runs whose workflow no live worker serves (a worker logs the names it serves).

    [bold]Examples[/bold]
      wfctl worker myapp.flows
      wfctl worker myapp.flows:wf -c 16 --queue payments --limit checkout=4
      wfctl --dsn postgresql://ops@db/app worker docs/examples/checkout.py
      wfctl worker myapp.flows --metrics-port 9464
      wfctl worker myapp.flows -v --log-format json --otel
      wfctl worker status
      wfctl --format json worker status

    With --metrics-port: steps (counter by outcome, workflow and step; duration histogram by
    workflow and step), replays, lease expiries, and read at scrape time runs by status,
    queue depth by state and the oldest ready run's age (docs/cli.md lists the metric names).
    --log-format json: one JSON object per log line (timestamp, level, message, worker_id,
    run_id). --otel: OpenTelemetry spans per drive (with the workflow name) and per step.
    """
    st = state(ctx)
    if target == "status":
        show_status(st)
        return
    st.output.require(Format.TEXT, Format.PLAIN)
    flush_spans = logs.setup(st, log_format, otel, queue=queue)
    registry = load_registry(target)
    if not registry.workflows:
        raise UsageError(f"{target} defines no workflows")
    # after the user's module configured its own logging, if it does
    logs.user_logging(log_format, log_level, queue=queue)
    config = WorkerConfig(
        queue=queue,
        concurrency=concurrency,
        lease=max(0.3, parse_duration(lease, "--lease").total_seconds()),
        poll=max(0.01, parse_duration(poll, "--poll").total_seconds()),
        limits=_limits(limit or [], registry),
    )
    with runtime_store(st, allow_node_peer=allow_node_peer, queue=True):
        pass  # bootstrap (embedded), Node-peer refusal, worker tables: once, up front

    def connect_worker() -> psycopg.Connection[Any]:
        return connect(st.target, autocommit=True)

    metrics = None
    if metrics_port is not None:
        from wfctl.worker.metrics import WorkerMetrics  # only a metrics worker pays for it

        metrics = WorkerMetrics(connect_worker)
        try:
            metrics.serve(metrics_port, metrics_addr)
        except OSError as exc:
            raise UsageError(f"--metrics-port {metrics_port}: cannot listen: {exc}") from None
        st.output.message(f"wfctl worker: metrics on http://{metrics_addr}:{metrics_port}/metrics")
    worker = Worker(
        registry,
        connect_worker,
        config,
        log=st.output.message,
        debug=st.output.debug,
        metrics=metrics,
    )
    logs.add_fields(st.output.logger, worker_id=worker.worker_id)
    logs.add_fields(logging.getLogger(), worker_id=worker.worker_id)  # the user's records
    signals = {"count": 0}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            line = logs.render(st.output.logger, "wfctl worker: second signal: exiting now")
            print(line, file=sys.stderr, flush=True)
            os._exit(1)
        name = signal.Signals(signum).name
        print(
            logs.render(
                st.output.logger,
                f"wfctl worker: {name}: finishing current steps, handing runs back",
            ),
            file=sys.stderr,
            flush=True,
        )
        worker.request_stop()

    # an ignored SIGINT stays ignored (docs/cli.md, "Signals"): SIGTERM stops the worker then
    caught = [signal.SIGTERM, *interruptible()]
    previous = {s: signal.signal(s, on_signal) for s in caught}
    try:
        worker.run()
    except psycopg.Error as exc:
        raise query_error(exc, st.target, "running the worker") from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        flush_spans()


def show_status(st: State) -> None:
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with connect(st.target, autocommit=True) as conn:
        try:
            row = conn.execute("SELECT to_regclass('wfctl.run_queue') IS NOT NULL").fetchone()
            if not (row and row[0]):
                raise WfctlError(
                    "this database has no worker queue yet",
                    hint="`wfctl bootstrap` (or the first `wfctl worker`) creates it",
                )
            with read_only(conn):
                report = q.status(conn)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "reading the worker status") from None
    if fmt is Format.JSON:
        st.output.json(report)
        return
    st.output.table(
        ["worker", "host", "pid", "queue", "started", "held", "concurrency", "heartbeat"],
        [
            [
                w["worker_id"],
                w["host"],
                w["pid"],
                w["queue"],
                w["started_at"],
                w["held"],
                w["concurrency"],
                f"{_age(w['heartbeat_age'])} ago",
            ]
            for w in report["workers"]
        ],
        title="live workers",
        optional=("host", "pid", "queue", "concurrency", "started"),
    )
    st.output.table(
        ["queue", "ready", "scheduled", "parked", "leased", "past lease", "oldest ready"],
        [
            [
                r["queue"],
                r["ready"],
                r["scheduled"],
                r["parked"],
                r["leased"],
                r["past_lease"],
                f"{r['oldest_ready']} ({_age(r['oldest_ready_age'])})" if r["oldest_ready"] else "",
            ]
            for r in report["queues"]
        ],
        title="queues",
        optional=("parked", "scheduled", "past lease"),
    )
    if report["unserved"]:
        st.output.table(
            ["queue", "workflow", "ready runs", "oldest", "waiting"],
            [
                [
                    r["queue"],
                    r["workflow_name"],
                    r["runs"],
                    r["oldest_run"],
                    _age(r["oldest_age"]),
                ]
                for r in report["unserved"]
            ],
            title="ready runs no live worker serves (start a worker that imports the workflow)",
        )
    if report["past_lease"]:
        st.output.table(
            ["run", "queue", "workflow", "owner", "overdue"],
            [
                [
                    r["run_id"],
                    r["queue"],
                    r["workflow_name"],
                    r["lease_owner"],
                    f"{r['overdue']:.1f}s",
                ]
                for r in report["past_lease"]
            ],
            title="runs past their lease",
        )


def _age(seconds: float) -> str:
    """An age in the one form (`1d 22h`, `46m 40s`); under a minute, tenths of a second."""
    if seconds < 60:
        return f"{max(0.0, seconds):.1f}s"
    from datetime import timedelta

    from wfctl.durations import format_duration

    return format_duration(timedelta(seconds=seconds))
