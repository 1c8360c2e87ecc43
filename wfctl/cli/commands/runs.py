"""`wfctl runs list/show/cancel`: look at and stop runs (any runtime's, Python or Node)."""

from __future__ import annotations

import shlex
from datetime import timedelta
from typing import Annotated, Any

import psycopg
import typer

from wfctl import sql
from wfctl.cli import complete
from wfctl.cli.actions import (
    Batch,
    DryRun,
    JobPrefix,
    MaxTime,
    Sample,
    Yes,
    apply_flags,
    confirm,
)
from wfctl.cli.app import State, app, state
from wfctl.cli.commands.run import runtime_store
from wfctl.cli.output import Format
from wfctl.clock import timestamp
from wfctl.connection.db import connect, query_error, read_only
from wfctl.durations import parse_duration
from wfctl.errors import ExitStatus, RefusedError, UsageError, WfctlError
from wfctl.ops import bulk, fork
from wfctl.ops.progress import Throttled
from wfctl.runtime import serde
from wfctl.runtime.engine import short_name
from wfctl.world import codec, model

runs_app = typer.Typer(
    help="List, inspect, cancel and wake workflow runs.\n\n[bold]Examples[/bold]\n"
    "  wfctl runs list --status running\n  wfctl runs show wrun_01J...\n"
    "  wfctl runs cancel wrun_01J... --reason 'customer asked'\n"
    "  wfctl runs cancel --where workflow='*import*' --where older-than=1d\n"
    "  wfctl runs wake --where error=ECONNREFUSED",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(runs_app, name="runs")

STATUSES = ("pending", "running", "completed", "failed", "cancelled")


def show_value(value: Any) -> Any:
    """A payload for display: `devl` bytes decoded, other bytes described."""
    if isinstance(value, bytes | bytearray):
        try:
            return serde.loads(bytes(value))
        except (ValueError, UnicodeDecodeError):
            return codec.describe(value)
    if isinstance(value, dict):
        return {k: show_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [show_value(v) for v in value]
    return value


@runs_app.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option("--status", help="Only this status.", autocompletion=complete.statuses),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Only workflows whose name, full or as shown, contains this.",
            autocompletion=complete.workflow_names,
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=10_000, help="At most this many (a page).")
    ] = 50,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="RUN_ID",
            help="The next page: runs older than this one.",
            autocompletion=complete.run_ids,
        ),
    ] = None,
) -> None:
    """List runs, newest first, a page at a time.

    When more runs match than --limit, stderr says how to get the next page (`--after` the
    last run shown).

    [bold]Examples[/bold]
      wfctl runs list
      wfctl runs list --status failed --name checkout
      wfctl runs list --limit 100 --after wrun_01J...
      wfctl --format json runs list --limit 10
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.MARKDOWN, Format.JSON)
    if status is not None and status not in STATUSES:
        raise UsageError(f"unknown status {status!r}", hint=f"one of: {', '.join(STATUSES)}")
    with runtime_store(st, reading=True) as store:
        if after is not None:
            found = store.conn.execute(sql.load("runtime/run_exists"), {"run_id": after})
            if not found.fetchone()[0]:  # type: ignore[index]
                raise UsageError(f"--after: no run {after}", hint="give a run id the list showed")
        params = {"status": status, "name": name, "after": after, "limit": limit + 1}
        rows = store.conn.execute(sql.load("runtime/list_runs"), params).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    items = [
        {
            "id": r[0],
            "status": r[1],
            "name": r[2],
            "created_at": timestamp(store.aware(r[3])),
            "completed_at": timestamp(r[4]),
            "error_code": r[5],
        }
        for r in rows
    ]
    if fmt is Format.JSON:
        st.output.json(items)
    else:
        st.output.table(
            ["id", "status", "workflow", "created", "error"],
            [
                (i["id"], i["status"], short_name(i["name"]), i["created_at"], i["error_code"])
                for i in items
            ],
            optional=("workflow", "created"),
        )
    if more:
        again = ["wfctl runs list"]
        again += [f"--status {status}"] if status else []
        again += [f"--name {shlex.quote(name)}"] if name else []
        again += [f"--limit {limit}"] if limit != 50 else []
        st.output.message(
            f"more runs match; next page: {' '.join(again)} --after {items[-1]['id']}"
        )


@runs_app.command("show")
def show_run(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", autocompletion=complete.run_ids)],
) -> None:
    """Show one run: its row, steps, waits, hooks and events, payloads decoded.

    [bold]Examples[/bold]
      wfctl runs show wrun_01J...
      wfctl --format json runs show wrun_01J... | jq '.events[].type'
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with runtime_store(st, reading=True) as store:
        run = store.read_run(run_id)
        if run is None:
            raise WfctlError(f"no run {run_id}", hint="`wfctl runs list` shows the runs")
        params = {"run_id": run_id}
        steps = store.conn.execute(sql.load("runtime/run_steps"), params).fetchall()
        waits = store.conn.execute(sql.load("runtime/run_waits"), params).fetchall()
        hooks = store.conn.execute(sql.load("runtime/run_hooks"), params).fetchall()
        events = store.read_events(run_id)
    report: dict[str, Any] = {
        "id": run.id,
        "status": run.status,
        "workflow": run.name,
        "deployment_id": run.deployment_id,
        "spec_version": run.spec_version,
        "created_at": timestamp(run.created_at),
        "completed_at": timestamp(run.completed_at),
        "input": show_value(run.input),
        "output": show_value(run.output),
        "error": show_value(run.error),
        "error_code": run.error_code,
        "attributes": run.attributes,
        "steps": [
            {
                "step_id": s[0],
                "name": s[1],
                "status": s[2],
                "attempt": s[3],
                "output": show_value(codec.decode(s[4])),
                "error": show_value(codec.decode(s[5])),
                "retry_after": timestamp(s[6]),
            }
            for s in steps
        ],
        "waits": [{"wait_id": w[0], "status": w[1], "resume_at": timestamp(w[2])} for w in waits],
        "hooks": [{"hook_id": h[0], "token": h[1]} for h in hooks],
        "events": [
            {
                "id": e.id,
                "type": e.type,
                "correlation_id": e.correlation_id,
                "created_at": timestamp(e.created_at),
                "data": show_value(e.data),
            }
            for e in events
        ],
    }
    if fmt is Format.JSON:
        st.output.json(report)
        return
    lines = [
        f"run:       {run.id}  ({run.status})",
        f"workflow:  {run.name}",
        f"input:     {report['input']}",
    ]
    if run.status == "completed":
        lines.append(f"output:    {report['output']}")
    if run.error is not None:
        lines.append(f"error:     {run.error_code} {report['error']}")
    st.output.data("\n".join(lines))
    if report["steps"]:
        st.output.table(
            ["step", "name", "status", "attempt"],
            [
                (s["step_id"], short_name(s["name"]), s["status"], s["attempt"])
                for s in report["steps"]
            ],
            title="steps",
        )
    if report["waits"] or report["hooks"]:
        st.output.table(
            ["entity", "state"],
            [(w["wait_id"], f"{w['status']} until {w['resume_at']}") for w in report["waits"]]
            + [(h["hook_id"], f"token {h['token']}") for h in report["hooks"]],
            title="waits and hooks",
        )
    st.output.table(
        ["event", "type", "correlation", "created"],
        [
            (e["id"], e["type"], e["correlation_id"] or "", e["created_at"])
            for e in report["events"]
        ],
        title="events",
        optional=("created",),
    )


WHERE_HELP = (
    "Filter term KEY=VALUE (repeatable, ANDed): workflow=GLOB, status=pending|running,"
    " older-than=D, newer-than=D (creation age), error-code=CODE"
)


@runs_app.command("cancel")
def cancel_run(
    ctx: typer.Context,
    run_id: Annotated[
        str | None, typer.Argument(metavar="[RUN_ID]", autocompletion=complete.run_ids)
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Recorded in run_cancelled (<= 512 chars) and the audit."),
    ] = None,
    where: Annotated[list[str] | None, typer.Option("--where", help=WHERE_HELP)] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="With --where: cancel (default: a dry run).")
    ] = False,
    dry_run: DryRun = False,
    yes: Yes = False,
    sample: Sample = 10,
    batch: Batch = 100,
    max_time: MaxTime = None,
    job_prefix: JobPrefix = "workflow_",
    graceful: Annotated[
        bool,
        typer.Option(
            "--graceful",
            help="Ask the workflow to cancel itself: it sees CancelledError at its next await, "
            "may run cleanup steps, and ends cancelled (a wfctl runtime run that a driver or "
            "worker continues).",
        ),
    ] = False,
) -> None:
    """Cancel one run, or every live run a --where filter selects.

    One run: its row, waits, hooks, run_cancelled and an audit row (`wfctl repair log`) in
    one transaction; exit 0 cancelled, 2 when the run had already ended. With --graceful (one
    run of the wfctl runtime) only a request is recorded (an attr_set event setting the
    attribute wfctl.cancelRequested, and a wake-up): the workflow gets asyncio.CancelledError
    at its next await, can run compensation steps, and the run ends cancelled when it lets
    the error out; exit 0 requested (or already requested), 2 when the run had already ended.
    By filter: a dry run showing the count and a sample unless --apply (with --reason, and
    --yes without a terminal); each run is then locked, re-checked against the filter and
    cancelled in its own transaction (run row, waits, hooks, run_cancelled, its unlocked
    queue jobs, an audit row). An empty filter is refused. Exit 0 done, 1 stopped by
    --max-time or runs busy (rerun), 64 usage.

    [bold]Examples[/bold]
      wfctl runs cancel wrun_01J... --reason "duplicate order"
      wfctl runs cancel wrun_01J... --graceful --reason "customer cancelled"
      wfctl runs cancel --where workflow='*checkout*' --where older-than=2h
      wfctl runs cancel --where status=pending --where older-than=1d --apply \\
          --reason "INC-42 stuck imports" --yes
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    if where:
        if run_id is not None:
            raise UsageError("give a RUN_ID or --where, not both")
        if graceful:
            raise UsageError("--graceful cancels one RUN_ID, not a --where selection")
        bulk_command(st, bulk.ACTIONS["cancel"], where, apply, dry_run, reason, yes, sample,
                     bulk.BulkOptions(batch, _budget(max_time), job_prefix))  # fmt: skip
        return
    if run_id is None:
        raise UsageError("give a RUN_ID, or --where KEY=VALUE to select runs")
    with runtime_store(st, allow_node_peer=True, create_world=False) as store:
        try:
            if graceful:
                before = store.request_cancel(run_id, reason)
            else:
                before, audit_id = bulk.cancel_one(store, run_id, (reason or "").strip())
        except LookupError as exc:
            raise WfctlError(str(exc), hint="`wfctl runs list` shows the runs") from None
    if graceful:
        _report_request(st, run_id, before)
        return
    cancelled = audit_id is not None
    if st.output.format is Format.JSON:
        st.output.json(
            {
                "run_id": run_id,
                "cancelled": cancelled,
                "status_before": before,
                "audit_id": audit_id,
            }
        )
    else:
        st.output.data(
            f"{run_id}: cancelled" if cancelled else f"{run_id}: already {before}, not changed"
        )
    if not cancelled:
        raise typer.Exit(int(ExitStatus.CRITICAL))


def _report_request(st: State, run_id: str, before: str) -> None:
    ended = before in ("completed", "failed", "cancelled")
    if st.output.format is Format.JSON:
        st.output.json(
            {"run_id": run_id, "requested": not ended, "status_before": before, "graceful": True}
        )
    elif ended:
        st.output.data(f"{run_id}: already {before}, not changed")
    elif before == "requested":
        st.output.data(f"{run_id}: cancellation already requested")
    else:
        st.output.data(f"{run_id}: cancellation requested (the workflow sees it at its next await)")
    if ended:
        raise typer.Exit(int(ExitStatus.CRITICAL))


@runs_app.command("wake")
def wake_runs(
    ctx: typer.Context,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", help=WHERE_HELP + ", error=TEXT (in the jobs' last_error)"),
    ] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Redrive (default: a dry run).")] = False,
    dry_run: DryRun = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log); with --apply.")
    ] = None,
    yes: Yes = False,
    sample: Sample = 10,
    batch: Batch = 100,
    max_time: MaxTime = None,
    job_prefix: JobPrefix = "workflow_",
) -> None:
    """Redrive dead-lettered runs: live runs whose queue jobs all used their attempts.

    Such a run is never delivered again (doctor reports WF134). A dry run shows the count
    and a sample with the jobs' last error unless --apply; then each run is locked,
    re-checked and its spent jobs get their deliveries back in one transaction (graphile's
    reschedule_jobs: attempts 0, due now, payload and key untouched), with an audit row.
    Fix the cause first (the last error says what failed). An empty filter is refused.
    Exit 0 done, 1 stopped by --max-time or runs busy, 64 usage.

    [bold]Examples[/bold]
      wfctl runs wake --where status=running
      wfctl runs wake --where error=ECONNREFUSED --apply --reason "INC-7" --yes
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    bulk_command(st, bulk.ACTIONS["wake"], where or [], apply, dry_run, reason, yes, sample,
                 bulk.BulkOptions(batch, _budget(max_time), job_prefix))  # fmt: skip


def _budget(max_time: str | None) -> timedelta | None:
    return parse_duration(max_time, "--max-time") if max_time else None


def bulk_command(
    st: State,
    action: bulk.Action,
    where: list[str],
    apply: bool,
    dry_run: bool,
    reason: str | None,
    yes: bool,
    sample: int,
    options: bulk.BulkOptions,
) -> None:
    """Shared by cancel and wake: filter, count and sample, confirm, act, report."""
    reason_text = apply_flags(apply, dry_run, reason)
    flt = bulk.parse_where(where, allow_error=action.name == "wake")
    with connect(st.target, autocommit=True) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
            world.require_known()
            if action.name == "wake" and not world.has_graphile:
                raise RefusedError("graphile_worker is not installed here: no dead letters")
            runs = bulk.matched(conn, action, flt, options)
            if not apply:
                report = bulk.BulkReport(action.name, False, flt.text, runs)
            else:
                world.require_primary(f"{action.name} runs")
                st.output.message(f"wfctl runs {action.name}: {len(runs):,} runs match")
                if runs:
                    _show_sample(st, runs, sample)
                    confirm(f"{action.name.capitalize()} {len(runs):,} runs?", yes)
                progress = Throttled(st.output.message)
                report = bulk.apply(
                    conn, world, action, flt, options, runs, reason=reason_text,
                    on_batch=lambda r: progress(
                        f"wfctl runs {action.name}: {len(r.outcomes):,}/{len(r.matched):,} runs,"
                        f" {r.counts}"
                    ),
                )  # fmt: skip
        except psycopg.Error as exc:
            raise query_error(exc, st.target, f"bulk {action.name}") from None
    if st.output.format is Format.JSON:
        st.output.json(report.as_dict(sample))
    else:
        _print_bulk(st, report, sample)
    raise typer.Exit(int(ExitStatus.OK if report.complete else ExitStatus.WARNING))


def _show_sample(st: State, runs: list[bulk.Selected], sample: int) -> None:
    for s in runs[:sample]:
        st.output.message(
            f"  {s.run_id} {s.status} {s.name} created {timestamp(s.created_at)} {s.detail}"
        )
    if len(runs) > sample:
        st.output.message(f"  ... and {len(runs) - sample:,} more")


def _print_bulk(st: State, report: bulk.BulkReport, sample: int) -> None:
    verb = report.action
    if not report.applied:
        st.output.data(
            f"wfctl runs {verb}: {len(report.matched):,} runs match {' AND '.join(report.filter)}"
            " (dry run: nothing changed; add --apply --reason TEXT)"
        )
        st.output.table(
            ["run", "status", "workflow", "created", "detail"],
            [(s.run_id, s.status, s.name, timestamp(s.created_at), s.detail) for s in
             report.matched[:sample]],
        )  # fmt: skip
        return
    for o in report.outcomes:
        st.output.data(f"{o.run_id}: {o.outcome}" + (f" ({o.detail})" if o.detail else ""))
    counts = ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())) or "none"
    st.output.data(f"wfctl runs {verb}: {counts} in {report.seconds:.1f} s")
    if report.stopped:
        st.output.message(f"wfctl runs {verb}: stopped: {report.stopped}")


@runs_app.command("fork")
def fork_run(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", autocompletion=complete.run_ids)],
    from_step: Annotated[
        str | None,
        typer.Option(
            "--from-step",
            metavar="STEP",
            help="Re-execute from this step (its id, or its number in creation order, 1 ="
            " first); earlier steps are copied. Default: rerun from the start.",
        ),
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option("--queue", help="Python runs: worker queue (default: the source's)."),
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Create the fork (default: a dry run).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what the fork would copy (the default).")
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log); with --apply.")
    ] = None,
    job_prefix: JobPrefix = "workflow_",
) -> None:
    """Fork (rerun) a run: a new run with the same input, queued where the source was.

    Python runs can fork from a step: the events before it are copied (correlation ids
    rewritten for the new run), so earlier steps replay from the copy and the chosen step
    and the rest run again. Node runs rerun from the start only, as a new run with the
    source's input and a job under the same job prefix. A dry run showing what would be
    copied unless --apply (with --reason); then one transaction, audited. Refused: a prefix
    holding hooks, or a step that is still running at the cut (parallel steps).
    Exit 0 forked (or dry run), 2 refused, 64 usage.

    [bold]Examples[/bold]
      wfctl runs fork wrun_01J... --from-step 3
      wfctl runs fork wrun_01J... --apply --reason "rerun after the fix"
      wfctl runs fork wrun_01J... --from-step 3 --apply --reason "INC-9 redo"
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    reason_text = apply_flags(apply, dry_run, reason)
    dry_run = not apply
    with runtime_store(st, allow_node_peer=True) as store:
        world = model.inspect(store.conn, with_drift=False)
        world.require_known()  # nothing is written to a world wfctl does not know whole
        forked = fork.plan(store, world, run_id, from_step, queue=queue, job_prefix=job_prefix)
        audit_id = None if dry_run else fork.apply(store, world, forked, reason_text)
    result = {**forked.as_dict(), "applied": not dry_run, "audit_id": audit_id}
    if fmt is Format.JSON:
        st.output.json(result)
        return
    verb = "would fork" if dry_run else "forked"
    st.output.data(
        f"{run_id} {verb} as {forked.run_id} ({forked.runtime} run, queue {forked.queue}):"
        f" {result['copied_steps']} steps copied, re-executing from "
        f"{forked.from_step or 'the start'}"
        + (" (dry run: nothing written; add --apply --reason TEXT)" if dry_run else "")
    )


# `redrive` is what DBOS and queue tools call it: the same command under that name.
runs_app.command("redrive", help="Alias of `wfctl runs wake`: redrive dead-lettered runs.")(
    wake_runs
)

# `runs replay` lives in its own module (it loads workflow code); importing it registers it on
# runs_app, so `wfctl runs` (loaded lazily by the root group) offers it too.
from wfctl.cli.commands import replay as _replay  # noqa: E402, F401
