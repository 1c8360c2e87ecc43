"""`wfctl migrate`: upgrade a live world without blocking it.

`wfctl migrate status` reports; `wfctl migrate --online --package DIR` takes the world to the
release in DIR (wfctl.migrate.road); `wfctl migrate --online [--swap]` prepares or performs
the slot-era key swap (wfctl.migrate.online). The logic lives in `wfctl.migrate`; this module
parses, decides exit codes and renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import psycopg
import typer

from wfctl.cli.app import State, app, state
from wfctl.cli.migrate_progress import CliReporter
from wfctl.cli.output import Format, Output
from wfctl.connection.db import connect, query_error, read_only
from wfctl.errors import ExitStatus, UsageError, WfctlError
from wfctl.migrate import package as package_mod
from wfctl.migrate import road as road_mod
from wfctl.migrate import state as state_mod
from wfctl.migrate import status as status_mod
from wfctl.migrate.online import OnlineMigration, Options, Report

MIGRATE_HELP = """\
Upgrade a live world without blocking it.

[bold]--online --package DIR[/bold] takes the world to the @workflow/world-postgres release installed in DIR, from DIR's own journal and SQL: every migration not recorded, including those drizzle's own migrator would skip (it applies only entries newer than the newest recorded row). Indexes are built CONCURRENTLY (a changed one beside the old, then swapped), columns added by one catalog statement under a short lock_timeout (--lock-timeout MS, before or after the command; 1000 ms unless given) with bounded, jittered retries; each migration is then recorded exactly as drizzle records it, so the package's migrator afterwards applies nothing. Runs in flight that would fail after the upgrade are named and refuse the road unless --drain (wait for them) or --allow-failing-runs. --dry-run prints the plan with each statement's lock.

The slot-era event key swap: [bold]--online[/bold] alone prepares it (the unique (run_id, id) index, built concurrently); [bold]--swap --package DIR[/bold] also swaps the key in one catalog statement and records the replaced migrations. Only migrations wfctl recognises are replaced; any other package is refused.

Every step detects whether it already happened: rerun after any interruption (`wfctl migrate status` says where it stopped). A second `wfctl migrate` is refused and told who holds the migration lock.

Exit: 0 done, 1 done with catalog drift, 2 refused (downgrade, unknown statement, runs in flight, privileges, another migration running), 3 lock not granted after the retries / timeout / no world, 64 usage.

[bold]Examples[/bold]
  wfctl migrate --online --package node_modules/@workflow/world-postgres
  wfctl migrate --online --package DIR --dry-run
  wfctl migrate --online --package DIR --drain
  wfctl migrate status --package node_modules/@workflow/world-postgres
  wfctl migrate --online
  wfctl migrate --online --swap --package DIR --lock-timeout 500 --retries 20
"""  # noqa: E501 (one paragraph per line: rich wraps them)

SWAP_LOCK_TIMEOUT_MS = 1000  # lock wait per attempt of the exclusive statements, by default

migrate_app = typer.Typer(
    name="migrate",
    help=MIGRATE_HELP,
    rich_markup_mode="rich",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(migrate_app)

PackageOption = Annotated[
    Path | None,
    typer.Option(
        "--package",
        metavar="DIR",
        help="The installed @workflow/world-postgres folder (or its src/drizzle/migrations).",
        show_default=False,
    ),
]


@migrate_app.callback()
def migrate(
    ctx: typer.Context,
    online: Annotated[
        bool, typer.Option("--online", help="Prepare the swap: build the key's index concurrently.")
    ] = False,
    swap: Annotated[
        bool, typer.Option("--swap", help="Also swap the key and record the replaced migrations.")
    ] = False,
    package: PackageOption = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the exact plan with lock levels; write nothing."),
    ] = False,
    retries: Annotated[
        int,
        typer.Option("--retries", metavar="N", help="Retries after a lock timeout (0-100)."),
    ] = 10,
    drain: Annotated[
        bool,
        typer.Option(
            "--drain",
            help="Road: wait (with progress) until the runs in flight that would fail have "
            "ended, then migrate.",
        ),
    ] = False,
    drain_timeout: Annotated[
        int,
        typer.Option(
            "--drain-timeout",
            metavar="SECONDS",
            help="Road: give up --drain after this long (nothing written).",
        ),
    ] = 3600,
    carry: Annotated[
        bool,
        typer.Option(
            "--carry",
            help="Road: after the schema, rewrite the logs of the runs in flight the analysis "
            "can carry (guarded, audited), so the target runtime continues them.",
        ),
    ] = False,
    allow_failing_runs: Annotated[
        bool,
        typer.Option(
            "--allow-failing-runs",
            help="Road: go on although runs in flight would fail after the upgrade (named).",
        ),
    ] = False,
) -> None:
    st = state(ctx)
    if ctx.invoked_subcommand is not None:
        if online or swap or dry_run or drain or allow_failing_runs or carry:
            raise UsageError(
                "--online/--swap/--dry-run/--drain/--carry/--allow-failing-runs do not combine "
                f"with `migrate {ctx.invoked_subcommand}`",
                hint="see `wfctl migrate --help`",
            )
        if package is not None:
            ctx.meta["wfctl_migrate_package"] = package
        return
    if not online:
        if swap or dry_run or package is not None or drain or allow_failing_runs or carry:
            raise UsageError("these options need --online", hint="see `wfctl migrate --help`")
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    if swap and package is None:
        raise UsageError(
            "--swap needs --package DIR: wfctl records the replaced migrations from it",
            hint="e.g. --package node_modules/@workflow/world-postgres",
        )
    # The exclusive catalog statements wait --lock-timeout per attempt (the global option,
    # before or after the command); left at its default, a shorter SWAP_LOCK_TIMEOUT_MS.
    lock_timeout = st.target.timeouts.lock_ms if st.lock_timeout_given else SWAP_LOCK_TIMEOUT_MS
    if lock_timeout <= 0:
        raise UsageError(
            "--lock-timeout must be above 0 for migrate: without it the swap could queue every"
            " reader and writer of workflow_events behind it",
            hint="a few hundred to a few thousand milliseconds",
        )
    if not 0 <= retries <= 100:
        raise UsageError("--retries must be between 0 and 100", hint="the default is 10")
    if drain and allow_failing_runs:
        raise UsageError(
            "--drain and --allow-failing-runs exclude each other",
            hint="--drain waits for the runs; --allow-failing-runs lets them fail",
        )
    if drain_timeout <= 0:
        raise UsageError("--drain-timeout must be above 0 seconds", hint="the default is 3600")
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    if not swap and package is not None:
        located = package_mod.locate(package)
        if not _slot_era(st, located):
            road_options = road_mod.RoadOptions(
                package=located,
                dry_run=dry_run,
                lock_timeout_ms=lock_timeout,
                retries=retries,
                drain=drain,
                drain_timeout_s=float(drain_timeout),
                allow_failing_runs=allow_failing_runs,
                carry=carry,
            )
            _run_road(st, fmt, road_options)
            return
    if drain or allow_failing_runs or carry:
        raise UsageError(
            "--drain/--carry/--allow-failing-runs belong to the road (--online --package DIR, "
            "no --swap)",
            hint="see `wfctl migrate --help`",
        )
    options = Options(
        swap=swap,
        package=package_mod.load(package) if package is not None else None,
        dry_run=dry_run,
        lock_timeout_ms=lock_timeout,
        retries=retries,
    )
    try:
        report = OnlineMigration(st.target, CliReporter(st.output), options).run()
    except KeyboardInterrupt:
        raise WfctlError(
            "interrupted",
            hint="every phase is resumable; rerun the same command. An interrupted build "
            "leaves an INVALID index, which the rerun drops and rebuilds",
            status=ExitStatus.INTERRUPTED,
        ) from None
    if fmt is Format.JSON:
        st.output.json(report.as_dict())
    else:
        _print_report(st.output, report)
    if report.status:
        raise typer.Exit(int(report.status))


def _slot_era(st: State, package: package_mod.Package) -> bool:
    """Whether DIR's pending migrations swap the event key (the slot-era road, as before the
    general road existed): `--online --package DIR` then prepares that swap."""
    with connect(st.target) as conn:
        try:
            with read_only(conn):
                recorded = state_mod.read(conn)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "reading the recorded migrations") from None
    for entry in package.pending(recorded.max_created_at):
        try:
            if package.migration(entry).analyse().swaps_key:
                return True
        except WfctlError:
            return False
    return False


def _run_road(st: State, fmt: Format, options: road_mod.RoadOptions) -> None:
    try:
        report = road_mod.Road(st.target, CliReporter(st.output), options).run()
    except KeyboardInterrupt:
        raise WfctlError(
            "interrupted",
            hint="every step is resumable; rerun the same command (`wfctl migrate status` "
            "says where it stopped)",
            status=ExitStatus.INTERRUPTED,
        ) from None
    if fmt is Format.JSON:
        st.output.json(report.as_dict())
    else:
        st.output.data("\n".join(road_lines(report)))
    if report.status:
        raise typer.Exit(int(report.status))


def road_lines(report: road_mod.RoadReport) -> list[str]:
    """The road's plan (dry run) or outcome, as text."""
    lines: list[str] = []
    head = (
        f"{report.world} ({report.source}) -> @workflow/world-postgres {report.target}, "
        f"database {report.database!r}"
    )
    if report.dry_run:
        lines.append(
            f"plan for `wfctl migrate --online --package DIR`: {head}; nothing was written"
        )
    else:
        lines.append(f"wfctl migrate --online --package DIR: {head}")
    lines.append(f"package: {report.package}")
    if report.resumed_from:
        lines.append(f"an earlier run stopped: {report.resumed_from}")
    if report.lock_holder:
        lines.append(f"note: the wfctl migrate lock is held now by {report.lock_holder}")
    lines.append(
        f"recorded: {len(report.recorded)} migrations"
        + (f", newest {report.newest_recorded}" if report.newest_recorded else "")
    )
    pending = [p["tag"] for p in report.pending]
    lines.append(f"pending: {', '.join(pending) if pending else 'none'}")
    if report.drizzle_skips:
        lines.append(
            "the package's own migrator would apply "
            + (", ".join(report.drizzle_applies) or "nothing")
            + " and SKIP "
            + ", ".join(report.drizzle_skips)
            + ": it applies a journal entry only when its `when` is newer than the newest "
            f"recorded row, {report.newest_recorded}; wfctl applies them"
        )
    if report.runs or report.runs_note:
        lines.append(
            f"runs in flight: {len(report.runs)}"
            + (f" ({report.runs_note})" if report.runs_note else "")
        )
        for r in report.runs[:20]:
            lines.append(f"  - {r.run_id} {r.workflow_name} [{r.status}]: {r.fate}, {r.reason}")
        if len(report.runs) > 20:
            lines.append(f"  … and {len(report.runs) - 20} more (--format json lists all)")
    if report.runs_policy:
        lines.append(f"runs policy: {report.runs_policy}")
    for missing in report.privileges:
        lines.append(f"MISSING PRIVILEGE: {missing} (the road would be refused)")
    if report.dry_run:
        lines.append(
            f"locks: lock_timeout {report.lock_timeout_ms} ms per attempt, up to "
            f"{report.retries} retries; no ACCESS EXCLUSIVE lock outlives one catalog statement"
        )
    current = None
    n = 0
    for step in report.steps:
        if step.tag != current:
            current = step.tag
            n += 1
            skip = " (drizzle's migrator would skip it)" if step.tag in report.drizzle_skips else ""
            lines.append(f"{n}. {step.tag}{skip}")
        if report.dry_run:
            verb = "RUN " if step.action == "run" else "skip"
            lines.append(f"   [{verb}] {step.kind}: {step.reason}")
            if step.how:
                lines.append(f"       how: {step.how}")
            for text in step.sql:
                lines += [f"       {ln}" for ln in text.strip().splitlines()]
            lines.append(f"       lock: {step.lock}")
            if step.package_lock:
                lines.append(f"       the package's migrator: {step.package_lock}")
        else:
            took = f" ({step.seconds:.2f} s" if step.seconds is not None else ""
            if took and step.attempts and step.attempts > 1:
                took += f", {step.attempts} attempts"
            took += ")" if took else ""
            lines.append(f"   {step.action} {step.kind}{took}: {step.reason}")
    if not report.dry_run and report.catalog_release:
        lines.append(
            f"catalog: matches a fresh {report.catalog_release} world"
            if not report.catalog_drift
            else f"catalog drift from a fresh {report.catalog_release} world "
            f"({len(report.catalog_drift)}):"
        )
        lines += [f"  - {d}" for d in report.catalog_drift]
        for c in report.carried:
            lines.append(f"carry: run {c['run_id']}: {c['outcome']}, {c['reason']}")
        if report.column_order:
            lines.append(
                "note: column order differs from a fresh world on "
                + ", ".join(d.split(":")[0].removeprefix("table ") for d in report.column_order)
                + ": another migrator added later columns first (ADD COLUMN appends; only a "
                "table rewrite reorders). Neither the package nor wfctl reads columns by "
                "position; doctor's WF151 still lists it"
            )
    lines.append(f"next: {report.advice}")
    return lines


def _print_report(output: Output, report: Report) -> None:
    lines: list[str] = []
    if report.dry_run:
        lines.append(
            f"plan for `wfctl migrate --online{' --swap' if report.mode == 'swap' else ''}` on "
            f"{report.database!r} ({report.era_before}); nothing was written"
        )
        if report.lock_holder:
            lines.append(f"note: the wfctl migrate lock is held now by {report.lock_holder}")
        for n, step in enumerate(report.steps, 1):
            verb = "RUN " if step.action == "run" else "skip"
            lines.append(f"{n}. [{verb}] {step.name}: {step.reason}")
            if step.sql:
                lines += [f"       {ln}" for ln in step.sql.splitlines()]
            lines.append(f"     lock: {step.lock}")
            for row in step.rows:
                lines.append(
                    f"     record: {row['tag']} hash {row['hash']} created_at {row['created_at']}"
                )
    else:
        for step in report.steps:
            took = f" ({step.seconds:.2f} s" if step.seconds is not None else ""
            if took and step.attempts and step.attempts > 1:
                took += f", {step.attempts} attempts"
            took += ")" if took else ""
            verb = "ran " if step.action == "ran" else "done"
            lines.append(f"{verb} {step.name}{took}: {step.reason}")
            for row in step.rows:
                lines.append(
                    f"     recorded {row['tag']} (hash {row['hash'][:12]}…, "
                    f"created_at {row['created_at']})"
                )
        if report.era_after:
            lines.append(f"era: {report.era_before} -> {report.era_after}")
        if report.mode == "swap":
            lines.append(
                "catalog: matches the slot-era catalog"
                if not report.catalog_drift
                else f"catalog drift from the slot era ({len(report.catalog_drift)}):"
            )
            lines += [f"  - {d}" for d in report.catalog_drift]
    for item in report.remaining:
        mark = "" if item["recognised"] else " (not recognised by wfctl)"
        lines.append(f"pending after this: {item['tag']} (when {item['when']}){mark}")
    lines.append(f"next: {report.advice}")
    output.data("\n".join(lines))


@migrate_app.command("status")
def status(ctx: typer.Context, package: PackageOption = None) -> None:
    """Show the era, recorded migrations, pending ones with their locks, and what would block.

    Read-only. Names an INVALID leftover index and a migration in progress. With --package,
    lists each pending migration of that installed @workflow/world-postgres statement by
    statement with the lock it takes, the table sizes, an estimate of what the package's
    migrator would block as the world stands now, and whether `--online --swap` can replace
    it. Exit 0, or 1 with warnings (INVALID index, unrecognised or never-applied migrations).

    [bold]Examples[/bold]
      wfctl migrate status
      wfctl migrate status --package node_modules/@workflow/world-postgres
      wfctl --format json migrate status --package DIR | jq .would_block
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    folder = package if package is not None else ctx.meta.get("wfctl_migrate_package")
    if folder is not None and not package_mod.beta_line(package_mod.locate(folder)):
        # Not the beta.29 line (a 4.x release): its pending migrations are the road's plan.
        plan = road_mod.Road(
            st.target,
            CliReporter(st.output),
            road_mod.RoadOptions(package_mod.locate(folder), dry_run=True),
        ).run()
        if fmt is Format.JSON:
            st.output.json(plan.as_dict())
        else:
            st.output.data("\n".join(road_lines(plan)))
        return
    pkg = package_mod.load(folder) if folder is not None else None
    with connect(st.target) as conn:
        try:
            with read_only(conn):
                report = status_mod.build(conn, pkg)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "reading the migration status") from None
    if fmt is Format.JSON:
        st.output.json(report.as_dict())
    else:
        st.output.data("\n".join(status_mod.text_lines(report)))
    if not report.world.present:
        report.world.require_known()  # no world: exit 3 with its hint
    if report.status:
        raise typer.Exit(int(report.status))
