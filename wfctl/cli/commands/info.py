"""`wfctl info`: where wfctl connects and what it finds there. Read-only."""

from __future__ import annotations

from typing import Any

import psycopg
import typer
from psycopg import errors as pgerrors
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.cli.app import PinOption, app, pin, state
from wfctl.cli.output import Format
from wfctl.connection import embedded
from wfctl.connection.db import connect, query_error, read_only
from wfctl.doctor import registry, specs
from wfctl.world import drizzle, model, releases


@app.command()
def info(ctx: typer.Context, package: PinOption = None) -> None:
    """Show the resolved connection, the server, what kind of world it holds, and the spec
    versions of its runs and events with what doctor checks for each.

    The kind of world is the releases its drizzle journal can be ("4.1.4, 4.1.5 or 4.2.0:
    journal 0000-0010"); --package DIR|VERSION pins it.

    Read-only: one READ ONLY transaction over the catalog, drizzle's bookkeeping table and a
    count of runs and events per spec version (a scan of the events table).
    Exit 0 for a world wfctl knows, 3 for no world, an unknown shape, or a world wfctl does
    not know whole (an unknown migration recorded, an unknown package pinned: everything it
    does know is shown first).

    [bold]Examples[/bold]
      wfctl info
      WORKFLOW_POSTGRES_URL=postgresql://ops@db/app wfctl info
      wfctl --format json info
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    pin(st, package)
    with connect(st.target) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, pinned=st.pinned)
                versions = _spec_versions(conn) if world.present else []
                tasks = _queue_tasks(conn) if world.has_graphile else []
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "inspecting the world") from None
    report: dict[str, Any] = {
        "dsn_source": st.target.dsn.source,
        "dsn": st.target.dsn.masked,
        "embedded": embedded.server_state().as_dict() if st.target.dsn.is_embedded else None,
        **world.as_dict(),
        "queue_tasks": tasks,
        "spec_versions": versions,
    }
    if fmt is Format.JSON:
        st.output.json(report)
    else:
        _print_text(st.output.data, report, world)
    world.require_known(acting=False)


def _print_text(write: Any, report: dict[str, Any], world: model.World) -> None:
    lines = [
        f"connection:   {report['dsn']}  (from {report['dsn_source']})",
        f"server:       PostgreSQL {world.server_version}, database {world.database!r}, "
        f"user {world.user!r}"
        + (", read-only hot standby (pg_is_in_recovery)" if world.standby else ""),
        f"world:        {world.kind}",
    ]
    if report["embedded"]:
        lines[1:1] = [
            f"embedded:     {report['embedded']['dsn']}  (pid {report['embedded']['pid']};"
            " it keeps running after wfctl exits: `wfctl embedded stop` stops it)"
        ]
    if world.present:
        queue = "installed" if world.has_graphile else "not installed"
        lines += [
            f"event key:    ({world.events_key})" if world.events_key else "event key:    none",
            f"queue:        graphile_worker {queue}"
            + (f"; UNREADABLE: {world.queue_unreadable}" if world.queue_unreadable else "")
            + _tasks_text(report["queue_tasks"]),
            f"wfctl schema: {'present' if world.has_wfctl else 'absent'}",
            f"migrations:   {len(world.migrations)} recorded"
            + (f", latest {world.migrations[-1]}" if world.migrations else ""),
        ]
        if report["journal"]:
            lines.append(f"journal:      {report['journal']}")
        if world.unknowable:
            lines.append(f"UNKNOWN:      {world.unknowable}; nothing will be written to it")
        if world.missing_tables:
            lines.append(f"INCOMPLETE:   missing {', '.join(world.missing_tables)}")
        release = world.release
        if release is not None:
            lacks = f"; lacks {', '.join(sorted(release.lacks))}" if release.lacks else ""
            lines.append(
                f"release:      {release.name} (spec {release.spec_version or 'per run'}; "
                f"queue tasks {', '.join(release.tasks('<prefix>'))}{lacks})"
            )
            if release.worst_case:
                lines.append(
                    "              its runtime facts are the worst case among these versions; "
                    "pin yours with --package DIR (or WFCTL_PACKAGE_VERSION)"
                )
            elif release.known_by != "journal":
                lines.append(f"              known by: {release.known_by}")
            own = releases.PACKAGES.get(release.candidates[0]) if release.candidates else None
            missing = [t for t in own.journal if t not in world.migrations] if own else []
            if own is not None and missing:
                lines.append(
                    f"              {own.version}'s own setup records {drizzle.span(missing)} "
                    "too: its migrator has not run on this world"
                )
        if world.unknowable:
            lines.append("catalog:      not compared (what this world should hold is unknown)")
        elif world.drift:
            lines.append(f"catalog drift ({len(world.drift)}):")
            lines += [f"  - {d}" for d in world.drift]
        else:
            what = release.name if release else "this era"
            lines.append(f"catalog:      matches the expected catalog of {what}")
        upgrade = world.upgrade()
        if upgrade is not None:
            lines.append("upgrade view (information; nothing is changed):")
            lines += [f"  - {line}" for line in upgrade.lines()]
        lines += _spec_lines(report["spec_versions"])
    write("\n".join(lines))


def _queue_tasks(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """The tasks graphile has registered, with their jobs: what the world's runtimes queued
    (a 4.x past leaves `<prefix>steps`); empty where the role may not read them."""
    try:
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql.load("world/queue_tasks")).fetchall()
    except psycopg.Error:
        return []


def _tasks_text(tasks: list[dict[str, Any]]) -> str:
    if not tasks:
        return ""
    seen = [f"{t['identifier']} ({_count(t['jobs'], 'job')})" for t in tasks]
    return "; tasks seen: " + ", ".join(seen)


def _spec_versions(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Runs and events per spec version, each with what doctor does for it (wfctl.doctor.specs).

    A role that may not read the tables, or a world older than the spec_version columns, gets
    the catalog facts and an `error` entry instead."""
    codes = [c.code for c in registry.CHECKS]
    try:
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(sql.load("world/spec_versions")).fetchall()
    except pgerrors.InsufficientPrivilege as exc:
        return [{"error": f"insufficient privilege: {str(exc).splitlines()[0]}"}]
    except pgerrors.UndefinedColumn:  # a world older than migration 0006 (no spec_version)
        return [{"error": "this world predates spec versions (migrations 0005/0006)"}]
    out = []
    for row in rows:
        spec = specs.parse(row["spec"])
        profile = specs.profile(spec, codes)
        out.append(
            {
                "spec_version": row["spec"],
                "name": profile.name,
                "runs": row["runs"],
                "expired_runs": row["expired_runs"],
                "events": row["events"],
                "doctor_skips": list(profile.skipped),
                "notes": list(profile.notes),
            }
        )
    return sorted(out, key=lambda v: (specs.parse(v["spec_version"]) or 0, v["spec_version"] or ""))


def _spec_lines(versions: list[dict[str, Any]]) -> list[str]:
    if not versions:
        return ["spec versions: none (no runs or events yet)"]
    if "error" in versions[0]:
        return [f"spec versions: unknown ({versions[0]['error']})"]
    lines = ["spec versions (runs keep the version they were created with):"]
    for v in versions:
        expired = f", {v['expired_runs']:,} emptied by retention" if v["expired_runs"] else ""
        lines.append(
            f"  spec {v['spec_version'] or 'none'} ({v['name']}): {_count(v['runs'], 'run')}"
            f"{expired}, {_count(v['events'], 'event')}"
        )
        skips = f"skips {', '.join(v['doctor_skips'])}" if v["doctor_skips"] else "runs every check"
        lines.append(f"    doctor {skips}" + "".join(f"; {n}" for n in v["notes"]))
    return lines


def _count(n: int, noun: str) -> str:
    """`1 run`, `1,024 runs`."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
