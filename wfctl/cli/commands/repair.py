"""`wfctl repair`: guarded repairs, a dry run unless --apply; `wfctl repair log`: the audit."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Annotated, Any

import psycopg
import typer
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.cli import complete
from wfctl.cli.app import PinOption, app, pin, state
from wfctl.cli.output import Format, Output
from wfctl.connection.db import connect, query_error, read_only
from wfctl.doctor import missing_runs
from wfctl.durations import parse_duration
from wfctl.errors import ExitStatus, Interrupted, RefusedError, UsageError
from wfctl.repair import runner, wf135
from wfctl.world import model

repair_app = typer.Typer(
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(repair_app, name="repair")

MIN_AGE_FLOOR = timedelta(minutes=1)


@repair_app.callback()
def repair(
    ctx: typer.Context,
    apply: Annotated[bool, typer.Option("--apply", help="Write the repairs.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only print the plan (the default).")
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log); with --apply.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="Only these codes, e.g. WF101,WF112.", autocompletion=complete.codes
        ),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option("--run", help="Only this run (repeatable).", autocompletion=complete.run_ids),
    ] = (None),
    all_runs: Annotated[bool, typer.Option("--all", help="Terminal runs too (WF113).")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most N findings per code.")] = (
        1000
    ),
    min_age: Annotated[
        str, typer.Option("--min-age", help="Only findings older than this (floor 1m).")
    ] = "10m",
    force_min_age: Annotated[
        bool, typer.Option("--force-min-age", help="Allow --min-age below 1 minute.")
    ] = False,
    allow_rewrite: Annotated[
        bool,
        typer.Option(
            "--allow-rewrite",
            help="Let WF121/WF122/WF123 renumber a slot run's event ids (ids only; payloads, "
            "types, correlation ids and times are kept; never deletes an event).",
        ),
    ] = False,
    allow_revive: Annotated[
        bool,
        typer.Option(
            "--allow-revive",
            help="Revive runs the runtime failed over a late step_started (WF141; with --all "
            "or --run): re-order it, drop the run_failed, reopen and wake the run.",
        ),
    ] = False,
    job_prefix: Annotated[
        str,
        typer.Option("--job-prefix", envvar="WORKFLOW_POSTGRES_JOB_PREFIX", help="Job prefix."),
    ] = "workflow_",
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, max=32, help="Runs repaired in parallel.")
    ] = 4,
    unlock_older_than: Annotated[
        str | None,
        typer.Option(
            "--unlock-older-than",
            metavar="AGE",
            help="Release queue locks held longer than AGE, e.g. 30m (WF135; floor 5m). "
            "Without --apply: only list them.",
        ),
    ] = None,
    unlock_dead_worker: Annotated[
        list[str] | None,
        typer.Option(
            "--unlock-dead-worker",
            metavar="WORKER_ID",
            help="Also release the locks of this worker, known dead, whatever their age "
            "(repeatable).",
        ),
    ] = None,
    package: PinOption = None,
) -> None:
    """Append the events doctor found missing, in one short guarded transaction per run.

    Every repair locks the run and entity rows, re-checks its finding with doctor's own
    query, refuses while the finding is younger than --min-age or a queue job for the run is
    locked, numbers the event the way the run does (slot or wevt_), copies payload bytes
    from the row, and writes an audit row (on a world wfctl never saw, --apply first creates
    its audit table in schema `wfctl`, and nothing else). A lock left by a killed worker
    (graphile frees it only after 4 h) is released first with --unlock-older-than AGE: the
    dry run lists the locks older than AGE, the apply releases exactly those, re-checked and
    audited (WF135). A dry run (the default) writes nothing. Exit 0 when every targeted
    finding is gone, 2 when any was refused or remains, 130 on Ctrl-C or SIGTERM (the report
    and the last line say what was written before it).

    --allow-rewrite lets WF121/WF122/WF123 renumber a slot run's event ids (damage no
    append can heal): ids only, in replay order, under the run's row, event and job locks;
    never a payload, type, correlation id or time, never a deletion.

    [bold]Examples[/bold]
      wfctl repair
      wfctl repair --only WF112 --run wrun_01J...
      wfctl repair --apply --reason "INC-42 wedged checkout runs" --yes
      wfctl repair --unlock-older-than 30m
      wfctl repair --apply --reason "INC-42 OOM" --yes --unlock-older-than 30m
      wfctl repair --apply --reason INC-43 --yes --all --only WF141 --allow-revive
      wfctl repair --only WF121,WF122,WF123 --allow-rewrite
      wfctl repair log --run wrun_01J...
    """
    if ctx.invoked_subcommand is not None:
        return
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    pin(st, package)
    if apply and dry_run:
        raise UsageError("--apply and --dry-run exclude each other")
    age = parse_duration(min_age, "--min-age")
    if age < MIN_AGE_FLOOR and not force_min_age:
        raise UsageError(
            f"--min-age {min_age} is below the 1 minute floor",
            hint="an original insert can take minutes; add --force-min-age if you are sure",
        )
    if apply and not (reason and reason.strip()):
        raise UsageError("--apply needs --reason TEXT (it is kept in the audit log)")
    unlock = _unlock_options(unlock_older_than, unlock_dead_worker, force_min_age)
    options = runner.RepairOptions(
        min_age=age,
        only=tuple(c.strip().upper() for item in only or () for c in item.split(",") if c),
        run_ids=tuple(run or ()),
        all_runs=all_runs,
        limit=limit,
        job_prefix=job_prefix,
        workers=jobs,
        allow_rewrite=allow_rewrite,
        allow_revive=allow_revive,
    )
    with connect(st.target, autocommit=True) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False, pinned=st.pinned)
                world.require_known()
                if options.run_ids:
                    missing_runs.require_runs(conn, options.run_ids)
            if unlock is not None and not world.has_graphile:
                raise UsageError("--unlock-older-than: graphile_worker is not installed here")
            if unlock is not None and world.queue_unreadable:
                raise RefusedError(
                    f"--unlock-older-than: cannot see the queue's locks: {world.queue_unreadable}",
                    hint="run as the queue's owner or a role with a policy (docs/cli.md, 'Roles');"
                    " nothing was written",
                )
            created = False
            if apply:
                world.require_primary("apply repairs")
                if not yes:
                    _confirm_plan(st.output, conn, world, options, unlock)
                created = _audit_schema(st.output, conn)
            report = runner.repair(
                conn,
                world,
                options,
                apply=apply,
                reason=reason or "",
                connect=lambda: connect(st.target, autocommit=True),
                unlock=unlock,
            )
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "repairing") from None
        except KeyboardInterrupt:  # before any write (looking at the world, a dry run's step)
            raise Interrupted("wfctl: interrupted: nothing written") from None
    _print(st.output, fmt, report)
    if report.interrupted:
        raise Interrupted(_interrupted_line(report, created))
    raise typer.Exit(int(report.exit_status))


# Where the signal landed (runner.INTERRUPTED_DURING), in an operator's words.
DURING = {
    "detection": "detection",
    "plan": "the plan",
    "unlock": "the release of stale locks",
    "repair": "the repair of runs",
}


def _interrupted_line(report: runner.RepairReport, created: bool) -> str:
    """The last stderr line after a signal: what was written, plainly (the report lists it)."""
    if not report.applied:
        return "wfctl: interrupted: dry run, nothing written"
    during = report.interrupted_during or "repair"
    head = f"wfctl: interrupted during {DURING[during]}: "
    applied = [i for i in report.items if i.outcome == "applied"]
    locks = sum(1 for i in applied if i.finding.code == wf135.CODE)
    repaired = len(applied) - locks
    written = " and ".join(
        ([f"{locks} lock(s) released"] if locks else [])
        + ([f"{repaired} finding(s) repaired"] if repaired or during == "repair" else [])
    )
    schema = "; the audit log (schema `wfctl`) was created first" if created else ""
    if during == "repair":
        return (
            f"{head}stopped starting runs; {written} before the signal, listed above (each run's"
            f" transaction committed whole or rolled back){schema}; `wfctl doctor` shows what"
            " remains"
        )
    if not applied:
        if created:
            return f"{head}nothing written but the empty audit log (schema `wfctl`), created first"
        return f"{head}nothing written"
    if during == "detection":  # after a round that wrote: that round's items, nothing since
        return f"{head}{written} before the signal, listed above; nothing else written{schema}"
    return f"{head}{written}, listed above{'; no run repaired' if not repaired else ''}{schema}"


def _audit_schema(output: Output, conn: psycopg.Connection[Any]) -> bool:
    """Create the audit log if missing (bootstrap.ensure_audit_schema); whether it did. A signal
    meanwhile ends the command: its one transaction committed or rolled back, said which."""
    from wfctl.world import bootstrap  # alembic: only an apply pays for it

    try:
        created = bootstrap.ensure_audit_schema(conn)
    except KeyboardInterrupt:
        try:  # its one transaction committed or rolled back: ask which
            row = conn.execute(sql.load("bootstrap/audit_log_exists")).fetchone()
            there = (
                "it is there (committed before the signal); nothing repaired"
                if row and row[0]
                else "nothing written"
            )
        except psycopg.Error:
            there = "it may or may not be there (`wfctl repair log` tells); nothing repaired"
        raise Interrupted(
            f"wfctl: interrupted while creating schema `wfctl` for the repair audit log: {there}"
        ) from None
    if created:
        output.message("created schema `wfctl` for the repair audit log")
    return created


def _confirm_plan(
    output: Output,
    conn: psycopg.Connection[Any],
    world: model.World,
    options: runner.RepairOptions,
    unlock: wf135.Unlock | None,
) -> None:
    """Show the plan (the dry run, on stderr) and ask; "no" is an answer, not an interruption:
    exit 0, nothing written. Ctrl-C (or SIGTERM) while planning or at the question: exit 130,
    nothing written."""
    if not sys.stdin.isatty():
        raise UsageError("--apply without a terminal needs --yes")
    plan = runner.repair(conn, world, options, apply=False, unlock=unlock)
    if plan.interrupted:
        raise Interrupted("wfctl: interrupted while planning, before the question: nothing written")
    output.err.print(_text(plan), markup=False, highlight=False)
    planned = sum(1 for i in plan.items if i.outcome == "planned")
    refused = sum(1 for i in plan.items if i.outcome == "refused")
    question = (
        f"Apply {planned} planned repair(s) to database {world.database!r}"
        + (f" ({refused} refused as shown)" if refused else "")
        + "? The apply re-checks each under lock"
    )
    try:
        answer = typer.confirm(question, err=True)
    except (KeyboardInterrupt, typer.Abort):  # click turns Ctrl-C (and end of input) into Abort
        output.err.print("")  # end the question's line
        raise Interrupted(
            "wfctl: interrupted at the confirmation prompt: nothing written"
        ) from None
    if not answer:
        output.message("wfctl repair: not applied: nothing written")
        raise typer.Exit(int(ExitStatus.OK))


def _unlock_options(
    older_than: str | None, workers: list[str] | None, force: bool
) -> wf135.Unlock | None:
    """The WF135 lock selector, with its floor (wf135.UNLOCK_FLOOR: a younger lock may belong
    to a live delivery)."""
    if older_than is None and not workers:
        return None
    age = parse_duration(older_than, "--unlock-older-than") if older_than is not None else None
    if age is not None and age < wf135.UNLOCK_FLOOR and not force:
        raise UsageError(
            f"--unlock-older-than {older_than} is below the 5 minute floor",
            hint="a live delivery can hold its lock for minutes; add --force-min-age if you "
            "are sure every holder is gone",
        )
    return wf135.Unlock(age, tuple(w.strip() for w in workers or () if w.strip()))


def _print(output: Output, fmt: Format, report: runner.RepairReport) -> None:
    if fmt is Format.JSON:
        output.json(report.as_dict())
        return
    output.data(_text(report))


def _text(report: runner.RepairReport) -> str:
    verb = "applied" if report.applied else "plan (dry run: nothing written)"
    during = DURING.get(report.interrupted_during or "repair", "")
    stopped = f" (interrupted during {during})" if report.interrupted else ""
    lines = [f"wfctl repair: {verb}{stopped}"]
    for item in report.items:
        f = item.finding
        lines.append(f"{f.code} run {f.run_id or '-'} {f.entity_id or ''}: {item.outcome}")
        if item.reason:
            lines.append(f"    why: {item.reason}")
        lines += [f"    - {a}" for a in item.actions]
        if item.event_ids:
            lines.append(f"    wrote: {', '.join(item.event_ids)} (audit #{item.audit_id})")
    if not report.items:
        empty = "nothing written" if report.applied else "nothing planned yet"
        lines.append(empty if report.interrupted else "nothing to repair")
    elif report.interrupted and not report.applied:
        lines.append("the plan above is incomplete (interrupted)")
    if report.applied and report.interrupted:
        lines.append(f"before: {_counts(report.before)}   after: not measured (interrupted)")
    elif report.applied:
        rounds = f" ({report.rounds} rounds)" if report.rounds > 1 else ""
        lines.append(
            f"before: {_counts(report.before)}   after: {_counts(report.after)}{rounds}"
            "   (after: doctor in the same scope, right after)"
        )
    if report.unfinished:
        lines.append(f"not finished: {report.unfinished}")
    if report.unlock_hint:
        lines.append(
            f"locked: `wfctl repair --unlock-older-than {report.unlock_hint}` covers every lock "
            "listed above (the youngest is held that long), once their workers are known gone"
        )
    return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"


@repair_app.command("log")
def log(
    ctx: typer.Context,
    run: Annotated[
        str | None, typer.Option("--run", help="Only this run.", autocompletion=complete.run_ids)
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most N entries.")] = 50,
) -> None:
    """List past repairs from the audit table (newest first).

    [bold]Examples[/bold]
      wfctl repair log
      wfctl --format json repair log --run wrun_01J...
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.MARKDOWN, Format.JSON)
    with connect(st.target) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
                if not world.has_wfctl:
                    raise RefusedError("no `wfctl` schema here: nothing was ever repaired by wfctl")
                with conn.cursor(row_factory=dict_row) as cur:
                    rows = cur.execute(sql.load("repair/log"), {"run_id": run, "limit": limit})
                    entries: list[dict[str, Any]] = rows.fetchall()
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "reading the repair log") from None
    if fmt is Format.JSON:
        st.output.json(entries)
        return
    st.output.table(
        ("id", "at", "user", "code", "run", "entity", "events", "reason"),
        [
            (
                e["id"],
                e["at"],
                e["db_user"],
                e["code"],
                e["run_id"],
                e["entity_id"] or "",
                ", ".join(e["event_ids"]),
                e["reason"],
            )
            for e in entries
        ],
    )
