"""`wfctl doctor`: read-only detection of every known corruption family."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import psycopg
import typer

from wfctl.cli import complete
from wfctl.cli.app import PinOption, State, app, pin, state
from wfctl.cli.output import Format, Output
from wfctl.clock import timestamp
from wfctl.connection.db import connect, query_error, read_only
from wfctl.connection.dsn import mask_text
from wfctl.doctor import missing_runs, registry
from wfctl.doctor import render as doctor_render
from wfctl.doctor import runner as doctor
from wfctl.doctor.base import Check
from wfctl.durations import parse_duration
from wfctl.errors import ExitStatus, UsageError, WfctlError
from wfctl.world import model

# `--all` reads every event in several long statements: two sessions use both cores of a
# small server (measured in docs/benchmarks.md); more is for bigger servers to choose.
DEFAULT_HISTORY_JOBS = 2


@app.command("doctor")
def doctor_command(
    ctx: typer.Context,
    min_age: Annotated[
        str,
        typer.Option(
            "--min-age",
            help="Findings younger than this are 'in flight' (a write may still be landing).",
        ),
    ] = "10m",
    all_runs: Annotated[
        bool, typer.Option("--all", help="Scan history too, not only pending/running runs.")
    ] = False,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run", help="Only this run (repeatable); any status.", autocompletion=complete.run_ids
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only runs created within this duration.")
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="Only these codes, e.g. WF112,WF131.", autocompletion=complete.codes
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Samples kept per check.")] = 5,
    attempt_threshold: Annotated[
        int,
        typer.Option(
            "--attempt-threshold",
            help="Ignored (kept for scripts): WF131 judges progress, not attempt counts.",
        ),
    ] = 100,
    job_prefix: Annotated[
        str,
        typer.Option(
            "--job-prefix",
            envvar="WORKFLOW_POSTGRES_JOB_PREFIX",
            help="The world's graphile job prefix (task <prefix>flows).",
        ),
    ] = "workflow_",
    output_file: Annotated[
        Path | None,
        typer.Option("--output", help="Write the report to FILE atomically (textfile collector)."),
    ] = None,
    work_mem: Annotated[
        str,
        typer.Option(
            "--work-mem",
            envvar="WFCTL_WORK_MEM",
            help="work_mem for the scan's own transaction (e.g. 64MB, 1GB; 'server' keeps the"
            " server's): history checks hash millions of keys and spill below it.",
        ),
    ] = "64MB",
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            envvar="WFCTL_DOCTOR_JOBS",
            help="Sessions to share the checks over, all reading one snapshot (default: 2 with"
            " --all or --incremental, 1 otherwise; 1: a single session).",
        ),
    ] = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            metavar="CODE",
            help="Explain one finding code.",
            autocompletion=complete.codes,
        ),
    ] = None,
    incremental: Annotated[
        bool,
        typer.Option(
            "--incremental",
            help="--all, but only the runs touched since the last --incremental pass (keeps a"
            " watermark in schema wfctl; the first pass is full; on a hot standby it reads the"
            " primary's watermark and writes nothing).",
        ),
    ] = False,
    clock_skew: Annotated[
        str,
        typer.Option(
            "--clock-skew",
            help="With --incremental: how far application hosts' clocks may lag the database's.",
        ),
    ] = "5m",
    problems: Annotated[
        bool,
        typer.Option(
            "--problems",
            help="Text, plain, markdown: only the checks that found something or could not"
            " run (the verdict and exit status still count every check).",
        ),
    ] = False,
    package: PinOption = None,
) -> None:
    """Detect wedged runs: rows and events that disagree, runaway or missing wake-ups, drift.

    Read-only (one READ ONLY transaction, bounded by --statement-timeout), safe every minute
    from cron. By default only live runs and the queue are scanned. Exit 0 no findings,
    1 warnings only, 2 critical, 3 unknown (could not connect, a check could not run, or the
    world holds a migration or is pinned to a package wfctl does not know).

    [bold]Examples[/bold]
      wfctl doctor
      wfctl doctor --all --limit 20
      wfctl doctor --only WF112,WF131 --run wrun_01J...
      wfctl --format prometheus doctor --output /var/lib/node_exporter/wfctl.prom
      wfctl --format nagios doctor
      wfctl doctor --problems
      wfctl doctor --explain WF112
      wfctl doctor --incremental          # cron: the findings of --all, cheaper
    """
    st = state(ctx)
    if explain:
        _explain(st.output, registry.get(explain))
        return
    fmt = st.output.require(*Format)
    pin(st, package)
    options = doctor.DoctorOptions(
        min_age=parse_duration(min_age, "--min-age"),
        all_runs=all_runs,
        run_ids=tuple(run or ()),
        since=parse_duration(since, "--since") if since else None,
        limit=limit,
        attempt_threshold=attempt_threshold,
        job_prefix=job_prefix,
        work_mem=_work_mem(work_mem),
        jobs=jobs or (DEFAULT_HISTORY_JOBS if (all_runs or incremental) else 1),
    )
    checks = registry.select(only)
    if incremental and (run or since or only):
        raise UsageError("--incremental checks every run: it takes no --run, --since or --only")
    if output_file is not None and not output_file.parent.is_dir():
        raise UsageError(f"--output: directory {output_file.parent} does not exist")
    try:
        report = _diagnose(st, options, checks, incremental, clock_skew, run or [])
    except Exception as exc:
        if not isinstance(exc, UsageError):
            _say_unknown(st, fmt, output_file, exc)
        raise
    text = _render(st, fmt, report, problems)
    if output_file is not None:
        _write_atomically(output_file, text)
        st.output.message(f"wrote {output_file}")
    elif text:
        st.output.data(text)
    if fmt is Format.TEXT:
        st.output.message(doctor_render.summary_line(report))
    raise typer.Exit(int(report.exit_status))


def _diagnose(
    st: State,
    options: doctor.DoctorOptions,
    checks: list[Check],
    incremental: bool,
    clock_skew: str,
    run_ids: list[str],
) -> doctor.Report:
    """Connect and run the checks (or an incremental pass); any failure raises."""
    with connect(st.target) as conn, contextlib.ExitStack() as sessions:
        helpers = [sessions.enter_context(connect(st.target)) for _ in range(options.jobs - 1)]
        try:
            if incremental:
                skew = parse_duration(clock_skew, "--clock-skew")
                report = _incremental(st.output, conn, checks, options, skew, helpers, st.pinned)
            else:
                with read_only(conn, snapshot=bool(helpers)):
                    world = model.inspect(conn, with_drift=False, pinned=st.pinned)
                    world.require_present()
                    world.require_supports("doctor")
                    if run_ids:
                        missing_runs.require_runs(conn, run_ids)
                    report = _run(st.output, conn, world, checks, options, helpers)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "running doctor") from None
    return report


def _say_unknown(st: State, fmt: Format, output_file: Path | None, exc: Exception) -> None:
    """Doctor could not run: monitoring must hear it. Nagios gets its UNKNOWN line on stdout,
    the Prometheus textfile is rewritten with exit code 3 (a stale file would keep the last
    good verdict alive), jsonl a line saying so; the error line on stderr follows as always."""
    reason = exc.message if isinstance(exc, WfctlError) else f"internal error: {exc}"
    reason = mask_text(" ".join(reason.split()), st.target.dsn.conninfo)
    status = exc.status if isinstance(exc, WfctlError) else ExitStatus.UNKNOWN
    text = ""
    if fmt is Format.NAGIOS:
        text = doctor_render.nagios_failure(reason)
    elif fmt is Format.PROMETHEUS:
        text = doctor_render.prometheus_failure(reason, int(status), st.target.dsn.masked)
    elif fmt is Format.JSONL:
        text = doctor_render.jsonl_failure(reason, int(status), st.target.dsn.masked)
    if not text:
        return
    if output_file is not None:
        _write_atomically(output_file, text)
    else:
        st.output.data(text.rstrip("\n"))


def _incremental(
    output: Output,
    conn: psycopg.Connection[tuple[object, ...]],
    checks: list[Check],
    options: doctor.DoctorOptions,
    skew: timedelta,
    helpers: list[psycopg.Connection[tuple[object, ...]]],
    pinned: str | None = None,
) -> doctor.Report:
    """A read-only pass over the touched runs, then the watermark in its own transaction.

    On a hot standby nothing can be written: the pass starts from the last watermark the
    primary recorded (replicated here; a full pass when there is none) and records nothing."""
    from wfctl.doctor import incremental  # ids/ulid: only this mode needs them

    with read_only(conn, snapshot=bool(helpers)):
        world = model.inspect(conn, with_drift=False, pinned=pinned)
        world.require_present()
        world.require_supports("doctor")
        report, done = incremental.run(conn, world, checks, options, skew, helpers=helpers)
    if world.standby:
        saved = (
            "watermark NOT saved: the server is a read-only standby (pg_is_in_recovery);"
            " a pass on the primary records one"
        )
    else:
        incremental.save(conn, report, done)
        saved = (
            "watermark saved" if done.saved else "watermark NOT advanced (a check could not run)"
        )
    since = timestamp(done.previous.verified_to) if done.previous else None
    what = (
        "full pass (no watermark yet)"
        if done.full
        else f"{done.touched:,} runs since {since} (found in {done.touched_seconds:.2f} s)"
    )
    output.message(f"wfctl doctor --incremental: {what}; {saved}")
    return report


def _work_mem(text: str) -> str | None:
    """A PostgreSQL memory size, checked here so a typo is a usage error, not a failed scan."""
    value = text.strip()
    if value.lower() == "server":
        return None
    if not re.fullmatch(r"[1-9][0-9]*(kB|MB|GB)", value):
        raise UsageError(
            f"--work-mem: cannot read {text!r} as a memory size", hint="use e.g. 64MB, 512MB, 1GB"
        )
    return value


def _run(
    output: Output,
    conn: psycopg.Connection[tuple[object, ...]],
    world: model.World,
    checks: list[Check],
    options: doctor.DoctorOptions,
    helpers: list[psycopg.Connection[tuple[object, ...]]],
) -> doctor.Report:
    """Run the checks, with a progress line on stderr when a human is watching."""
    if output.format is not Format.TEXT or not sys.stderr.isatty():
        return doctor.run(conn, world, checks, options, helpers=helpers)
    from rich.progress import Progress, SpinnerColumn, TextColumn  # a terminal's only

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), console=output.err, transient=True
    ) as progress:
        task = progress.add_task("checking", total=len(checks))

        def on_check(check: Check) -> None:
            progress.update(task, description=f"{check.code} {check.title}", advance=1)

        return doctor.run(conn, world, checks, options, on_check, helpers=helpers)


def _render(st: State, fmt: Format, report: doctor.Report, problems: bool = False) -> str:
    output = st.output
    if fmt is Format.JSON:
        import json

        return json.dumps(report.as_dict(), indent=2, default=str)
    if fmt is Format.JSONL:
        return "\n".join(doctor_render.jsonl(report, st.target.dsn.masked))
    if fmt is Format.PROMETHEUS:
        return doctor_render.prometheus(report)
    if fmt is Format.NAGIOS:
        return doctor_render.nagios(report)
    if fmt is Format.TEXT:  # one line per check that matters: fits a terminal, not a page
        return "\n".join(doctor_render.compact(report, min(output.width, 100), problems))
    rows = doctor_render.rows(report)
    if problems:
        keep = {r.check.code for r in report.results if r.status not in doctor_render.QUIET}
        keep |= {r.check.code for r in report.results if r.count or r.in_flight}
        rows = [row for row in rows if row[0] in keep]
    output.table(doctor_render.HEADERS, rows, optional=("sample runs",))
    return "\n".join(doctor_render.details(report))


def _write_atomically(path: Path, text: str) -> None:
    """Write beside the target and rename: the collector never reads a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _explain(output: Output, check: Check) -> None:
    """The explanation of one code, in the invocation's format (text or json)."""
    from wfctl.doctor.support import check_support
    from wfctl.world import releases

    fmt = output.require(Format.TEXT, Format.PLAIN, Format.MARKDOWN, Format.JSON)
    e = check.explanation
    per_release = {r.key: check_support(check, r)[1] for r in releases.RELEASES.values()}
    if fmt is Format.JSON:
        output.json(
            {
                "code": check.code,
                "title": check.title,
                "severity": check.severity.value,
                "meaning": e.meaning,
                "why_stuck": e.why_stuck,
                "cause": e.cause,
                "repair": e.repair,
                "remedy": check.remedy,
                "releases": per_release,
            }
        )
        return
    output.data(
        "\n".join(
            [
                f"{check.code}: {check.title} (severity {check.severity.value})",
                "Upstream rule(s):  "
                + (", ".join(check.upstream_rules) or "none (no upstream consistency rule)"),
                "",
                f"What it means:  {e.meaning}",
                "",
                f"Why the run is stuck:  {e.why_stuck}",
                "",
                f"How it happened:  {e.cause}",
                "",
                f"What `wfctl repair` does:  {e.repair}",
                "",
                f"Remedy: {check.remedy}",
                "",
                "Per release line:",
                *(f"  {releases.RELEASES[key].package}: {how}" for key, how in per_release.items()),
            ]
        )
    )
