"""`wfctl migrate status`: era, recorded migrations, pending ones with their locks, blocking.

Read-only (one READ ONLY transaction over the catalog, planner statistics and drizzle's
bookkeeping; no table is scanned). With a package folder, each pending migration is
listed statement by statement with the lock it takes, and the estimate says what the
package's migrator would block given the world's current state (a valid prebuilt index
turns an index build under the lock into catalog work).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from wfctl.errors import ExitStatus, RefusedError
from wfctl.migrate import recognise
from wfctl.migrate import state as state_mod
from wfctl.migrate.online import Replaced, analyse_pending, plan_swap
from wfctl.migrate.package import Package
from wfctl.migrate.road import marker as road_marker
from wfctl.migrate.road import verdict as road_verdict
from wfctl.migrate.state import KeyState
from wfctl.world import drizzle, model

# Unique btree build rate over workflow_events' heap on the benchmark machine (2 cores,
# pgserver PostgreSQL 16, default maintenance_work_mem), see docs/benchmarks.md. The estimate
# scales the table's heap size by it: a rough guide, not a promise.
BUILD_BYTES_PER_S = 50 * 1024 * 1024  # 10M events, 1.7 GB heap: 27-35 s under the lock


@dataclass
class StatusReport:
    world: model.World
    st: KeyState
    sizes: dict[str, dict[str, Any]]
    invalid: list[dict[str, Any]]
    holder: str | None
    package: Package | None = None
    pending: list[Replaced] = field(default_factory=list)
    never_applied: list[str] = field(default_factory=list)
    swap: str = ""
    road_verdict: str = ""  # whether `--online --package DIR` (the road) can run
    road: str | None = None  # where an interrupted `--online --package DIR` stopped
    blocking: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> ExitStatus:
        return ExitStatus.WARNING if self.warnings else ExitStatus.OK

    def recorded(self) -> list[dict[str, Any]]:
        names = {m.sha256: m.tag for m in drizzle.BETA29}
        out = []
        for r in self.st.recorded:
            name = names.get(r.hash)
            if name is None and self.package is not None:
                entry = self.package.by_record(r.hash, r.created_at)
                name = entry.tag if entry else None
            out.append({"tag": name or f"unknown({r.created_at})", "when": r.created_at})
        return out

    def key_index(self) -> str:
        st = self.st
        if st.swapped:
            return "not needed: the key is already workflow_events_run_id_id_pk (run_id, id)"
        if st.key_index is None:
            return "absent"
        if st.key_index_builders:
            return f"being built by pid {', '.join(map(str, st.key_index_builders))}"
        if st.key_index == "invalid":
            return "INVALID (leftover of a failed concurrent build)"
        return (
            "valid"
            if st.key_index_ok
            else f"valid but not UNIQUE (run_id, id): {st.key_index_definition}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "database": self.world.database,
            "era": self.world.era if self.world.present else None,
            "kind": self.world.kind,
            "events_key": self.st.key_text(),
            "key_index": self.key_index(),
            "recorded": self.recorded(),
            "max_created_at": self.st.max_created_at,
            "invalid_indexes": self.invalid,
            "migration_lock_holder": self.holder,
            "tables": self.sizes,
            "package": self.package.label if self.package else None,
            "pending": [_pending_dict(p, self) for p in self.pending],
            "never_applied": self.never_applied,
            "swap": self.swap,
            "road_in_progress": self.road,
            "road": self.road_verdict,
            "would_block": self.blocking,
            "warnings": self.warnings,
        }


def _pending_dict(p: Replaced, report: StatusReport) -> dict[str, Any]:
    return {
        **p.as_dict(),
        "statements": [
            {
                "kind": s.kind,
                "lock": s.lock,
                "lock_text": s.lock_text(_size(report, s.table)),
                "sql": " ".join(s.text.split()),
            }
            for s in p.analysis.statements
        ],
    }


def _size(report: StatusReport, table: str | None) -> str:
    """`workflow.x (~N rows, 1.2 GB)`: what an index build on `table` has to read."""
    if table is None or table not in report.sizes:
        return ""
    size = report.sizes[table]
    rows = size["estimated_rows"]
    counted = f"~{rows:,} rows" if rows is not None else "rows unknown: never analyzed"
    return f"{table} ({counted}, {size['total_size']})"


def _heap_bytes(report: StatusReport, table: str) -> int:
    return int(report.sizes.get(table, {}).get("heap_bytes", 0))


def build(conn: psycopg.Connection[Any], package: Package | None) -> StatusReport:
    """Gather the report; the caller runs this inside a READ ONLY transaction."""
    world = model.inspect(conn, with_drift=False)
    st = state_mod.read(conn)
    holder = state_mod.advisory_holder(conn)
    report = StatusReport(
        world=world,
        st=st,
        sizes=state_mod.table_sizes(conn) if world.present else {},
        invalid=state_mod.invalid_indexes(conn) if world.present else [],
        holder=holder.describe() if holder else None,
        package=package,
    )
    for row in report.invalid:
        who = f" (being built by pid {row['building_pid']})" if row["building_pid"] else ""
        report.warnings.append(f"INVALID index {row['index']}{who}")
    report.road = road_marker(conn) if world.present else None
    if report.road and holder is None:
        report.warnings.append(
            f"an interrupted migration: {report.road}; rerun the same command to resume"
        )
    if package is not None and world.present:
        report.pending = analyse_pending(package, st)
        report.never_applied = _never_applied(package, st)
        for tag in report.never_applied:
            report.warnings.append(
                f"{tag} is older than the latest recorded migration but not recorded: drizzle "
                "will never apply it"
            )
        for p in report.pending:
            if any(not s.lock_known for s in p.analysis.statements):
                report.warnings.append(f"{p.tag}: statements whose locks wfctl cannot tell")
        report.swap = _swap_verdict(package, st)
        report.road_verdict = road_verdict(package, st)
        report.blocking = _blocking(report)
        for b in report.blocking:
            if b["index_builds"]:
                report.warnings.append(
                    f"the package's migrator would block {b['blocks']} on {b['table']} for "
                    f"full-table work (~{b['estimated_build_seconds']} s estimated)"
                )
    return report


def _never_applied(package: Package, st: KeyState) -> list[str]:
    floor = st.max_created_at
    if floor is None:
        return []
    whens = {r.created_at for r in st.recorded}
    return [e.tag for e in package.entries if e.when <= floor and e.when not in whens]


def _swap_verdict(package: Package, st: KeyState) -> str:
    try:
        plan = plan_swap(package, st)
    except RefusedError as exc:
        return f"refused: {exc.message}"
    if not plan.replaced:
        return "nothing to swap: the key is already (run_id, id)"
    tags = ", ".join(r.tag for r in plan.replaced)
    return f"possible: `wfctl migrate --online --swap` replaces {tags}"


def _blocking(report: StatusReport) -> list[dict[str, Any]]:
    """Per table: the strongest lock the package's migrator would hold until it commits."""
    st = report.st
    tables: dict[str, dict[str, Any]] = {}
    for p in report.pending:
        for s in p.analysis.statements:
            if s.table is None or _strength(s.lock) <= _strength(recognise.ROW_EXCLUSIVE):
                continue
            entry = tables.setdefault(
                s.table, {"table": s.table, "lock": recognise.NONE, "index_builds": 0}
            )
            if _strength(s.lock) > _strength(entry["lock"]):
                entry["lock"] = s.lock
            if s.builds_index and _builds_now(s, st):
                entry["index_builds"] += 1
    out = []
    for entry in tables.values():
        builds = entry["index_builds"]
        seconds = round(builds * _heap_bytes(report, entry["table"]) / BUILD_BYTES_PER_S, 1)
        blocks = {
            recognise.ACCESS_EXCLUSIVE: "all reads and writes",
            recognise.SHARE: "writes",
            recognise.SHARE_UPDATE_EXCLUSIVE: "no reads or writes (other DDL only)",
        }.get(entry["lock"], "unknown (unrecognised statements)")
        entry.update(
            blocks=blocks,
            estimated_build_seconds=seconds,
            summary=(
                f"{entry['table']}: {entry['lock']} until the migrator commits; blocks {blocks}"
                + (
                    f", including an index build over {_size(report, entry['table'])}, "
                    f"estimated ~{seconds} s"
                    if builds
                    else ", catalog work only"
                )
            ),
        )
        out.append(entry)
    return out


def _builds_now(s: recognise.Statement, st: KeyState) -> bool:
    """Whether a building statement would really build, given the world as it stands."""
    if s.kind == "adopt_key_index":
        return not st.key_index_ok
    if s.kind == "guarded_key_swap":
        return not st.swapped
    return True


def _strength(lock: str) -> int:
    return recognise.LOCK_ORDER.index(lock)


def text_lines(report: StatusReport) -> list[str]:
    """The human rendering (stdout)."""
    w, st = report.world, report.st
    lines = [f"database:     {w.database!r}", f"world:        {w.kind}"]
    if not w.present:
        return lines
    recorded = report.recorded()
    latest = f", latest {recorded[-1]['tag']} (when {recorded[-1]['when']})" if recorded else ""
    lines += [
        f"event key:    {st.key_text()}",
        f"key index:    workflow_events_run_id_id_idx {report.key_index()}",
        f"recorded:     {len(recorded)} drizzle migrations{latest}",
    ]
    if report.holder:
        lines.append(f"migrating:    the wfctl migrate lock is held by {report.holder}")
    if report.road:
        state = "running" if report.holder else "stopped (rerun the same command to resume)"
        lines.append(f"road:         {report.road}; {state}")
    for row in report.invalid:
        who = f", being built by pid {row['building_pid']}" if row["building_pid"] else ""
        lines.append(f"INVALID:      {row['index']} on {row['table']}{who}")
    lines.append("tables:")
    for name, size in report.sizes.items():
        rows = size["estimated_rows"]
        counted = f"~{rows:,} rows" if rows is not None else "never analyzed"
        lines.append(f"  {name:<36} {counted:>16}  {size['total_size']:>9}")
    if report.package is None:
        lines.append(
            "pending:      give --package DIR (the installed @workflow/world-postgres) to list "
            "its pending migrations and their locks"
        )
        return lines
    lines.append(f"package:      {report.package.label}")
    if not report.pending:
        lines.append("pending:      none: the package's migrator has nothing to apply")
    else:
        lines.append(f"pending:      {len(report.pending)}, applied in ONE transaction:")
    for p in report.pending:
        mark = ""
        if any(not s.lock_known for s in p.analysis.statements):
            mark = "  [not recognised]"
        elif not p.analysis.recognised:
            mark = "  [locks estimated; not replaceable by --swap]"
        lines.append(f"  {p.tag} (when {p.migration.when}){mark}")
        for s in p.analysis.statements:
            lines.append(f"    {_short(s.text)}")
            lines.append(f"      lock: {s.lock_text(_size(report, s.table))}")
    for tag in report.never_applied:
        lines.append(f"never applied: {tag} (older than the latest recorded migration)")
    if report.blocking:
        lines.append("would block (package's migrator, as the world stands now):")
        lines += [f"  {b['summary']}" for b in report.blocking]
    lines.append(f"online swap:  {report.swap}")
    if report.road_verdict:
        lines.append(f"online road:  {report.road_verdict}")
    return lines


def _short(text: str, limit: int = 96) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
