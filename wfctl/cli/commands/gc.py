"""`wfctl gc`: retention for terminal runs (a dry run unless --apply)."""

from __future__ import annotations

from typing import Annotated

import psycopg
import typer

from wfctl.cli.actions import DryRun, JobPrefix, MaxTime, Yes, apply_flags, confirm
from wfctl.cli.app import app, state
from wfctl.cli.output import Format, Output
from wfctl.clock import timestamp
from wfctl.connection.db import connect, query_error, read_only
from wfctl.durations import format_duration, parse_duration
from wfctl.errors import ExitStatus, Interrupted, UsageError
from wfctl.ops import gc
from wfctl.ops.progress import Throttled
from wfctl.world import model


@app.command("gc")
def gc_command(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than", help="Runs that COMPLETED longer ago than this (e.g. 30d, 12h)."
        ),
    ] = "30d",
    apply: Annotated[bool, typer.Option("--apply", help="Delete (default: a dry run).")] = False,
    dry_run: DryRun = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log); with --apply.")
    ] = None,
    yes: Yes = False,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=100_000, help="Runs per transaction.")
    ] = 500,
    max_time: MaxTime = None,
    pause: Annotated[
        str, typer.Option("--pause", help="Sleep between batches, to spare a busy primary.")
    ] = "0s",
    job_prefix: JobPrefix = "workflow_",
) -> None:
    """Delete terminal runs whose completion is older than --older-than, with their events,
    steps, waits, hooks, stream chunks, slot marker and queue jobs.

    The cutoff is on completion time, never creation. Each batch is one transaction that
    locks its runs, re-checks they are still terminal, deletes the events first and the run
    rows last, and writes an audit row. Kept for later: runs whose hook token is still
    retained (slot era), whose queue job a worker holds, or that another session has locked.
    One gc at a time (advisory lock). Interrupting it loses at most one batch: rerun to
    continue. Exit 0 done (or dry run), 1 stopped by --max-time with runs left, 2 refused
    (another gc is running, or the audit schema cannot be created), 64 usage.

    [bold]Examples[/bold]
      wfctl gc --older-than 30d
      wfctl gc --older-than 30d --apply --reason "retention" --yes --max-time 10m
      wfctl --format json gc --older-than 7d | jq .would_delete
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    reason_text = apply_flags(apply, dry_run, reason)
    age = parse_duration(older_than, "--older-than")
    if age <= parse_duration("0s"):
        raise UsageError("--older-than must be longer than 0")
    options = gc.GcOptions(
        older_than=age,
        batch=batch,
        max_time=parse_duration(max_time, "--max-time") if max_time else None,
        pause=parse_duration(pause, "--pause").total_seconds(),
        job_prefix=job_prefix,
    )
    with connect(st.target, autocommit=True) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
            world.require_known()
            world.require_visible("collect garbage")
            if not apply:
                report = gc.plan(conn, world, options)
            else:
                world.require_writable("collect garbage")
                report = _apply(st.output, conn, world, options, reason_text, yes)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "collecting garbage") from None
        except KeyboardInterrupt:  # before the first batch committed
            what = "nothing deleted" if apply else "dry run, nothing deleted"
            raise Interrupted(f"wfctl: interrupted: {what}") from None
    _print(st.output, fmt, report)
    if report.interrupted:
        raise Interrupted(_interrupted_line(report))
    raise typer.Exit(int(ExitStatus.OK if report.complete else ExitStatus.WARNING))


def _interrupted_line(report: gc.GcReport) -> str:
    """The last stderr line after a signal: what was deleted (the report lists it)."""
    return (
        f"wfctl: interrupted during gc: {report.counts['runs']:,} of {report.candidates:,} runs"
        f" ({report.rows:,} rows) deleted in {report.batches} batch(es) before the signal, listed"
        " above (each batch committed whole or rolled back; audited); rerun to continue"
    )


def _apply(
    output: Output,
    conn: psycopg.Connection[tuple[object, ...]],
    world: model.World,
    options: gc.GcOptions,
    reason: str,
    yes: bool,
) -> gc.GcReport:
    progress = Throttled(output.message)

    def on_start(report: gc.GcReport) -> None:
        output.message(
            f"wfctl gc: {report.candidates:,} terminal runs completed before "
            f"{timestamp(report.cutoff)}"
        )
        if report.candidates:
            confirm(f"Delete {report.candidates:,} runs and their history?", yes)

    def on_batch(report: gc.GcReport) -> None:
        progress(_progress_line(report))

    report = gc.collect(conn, world, options, reason=reason, on_start=on_start, on_batch=on_batch)
    if report.batches:
        progress(_progress_line(report), final=True)
    return report


def _progress_line(report: gc.GcReport) -> str:
    return (
        f"wfctl gc: {report.counts['runs']:,}/{report.candidates:,} runs, "
        f"{report.rows:,} rows deleted, {report.rows_per_second:,.0f} rows/s, "
        f"{report.batches} batches, {report.seconds:.1f} s"
    )


def _print(output: Output, fmt: Format, report: gc.GcReport) -> None:
    if fmt is Format.JSON:
        output.json(report.as_dict())
        return
    head = "wfctl gc: deleted" if report.applied else "wfctl gc: plan (dry run: nothing deleted)"
    lines = [
        f"{head}; cutoff {timestamp(report.cutoff)} "
        f"(completed more than {format_duration(report.older_than)} ago)",
    ]
    if report.oldest is not None:
        lines.append(f"completions from {timestamp(report.oldest)} to {timestamp(report.newest)}")
    if report.by_status:
        lines.append(", ".join(f"{n:,} {status}" for status, n in report.by_status.items()))
    output.data("\n".join(lines))
    output.table(["rows", "count"], [(k, f"{v:,}") for k, v in report.counts.items() if v])
    kept = ", ".join(f"{k}={v}" for k, v in report.deferred.items() if v) or "none"
    if report.applied:
        output.data(
            f"kept for later: {kept}; {report.batches} batches in {report.seconds:.1f} s "
            f"({report.rows_per_second:,.0f} rows/s)"
        )
    else:
        output.data(
            f"would keep for later: {kept} (runs with a locked job or row are seen at apply)"
        )
    if report.stopped:
        output.message(f"wfctl gc: stopped: {report.stopped}")
