"""`wfctl migrate --online --package DIR`: take a world to the release installed in DIR, online.

DIR's own journal and SQL files are the plan's source (no copy of them inside wfctl). Each
recorded drizzle row is matched to DIR's journal by hash and `when`; every journal entry not
recorded is pending, including those drizzle's own migrator would silently skip (it applies an
entry only when its `when` is newer than the newest recorded row: a 4.3.x world, 0000-0010 +
0015, taken to 5.0.0-beta.29 gets 0016-0017 and never 0011-0014).

Every statement of a pending migration must be a form wfctl can run without holding a live
table longer than a bounded lock wait; anything else refuses the whole road before anything
is written. The forms (see `classify`):

  add-column     ALTER TABLE .. ADD COLUMN with no default or a constant one: one catalog
                 statement (ACCESS EXCLUSIVE) under lock_timeout, bounded jittered retries
  build-index    CREATE [UNIQUE] INDEX: built CONCURRENTLY outside a transaction (SHARE UPDATE
                 EXCLUSIVE: reads and writes go on); an INVALID leftover is dropped first
  replace-index  DROP INDEX X + CREATE INDEX X (a new definition): the new one is built
                 CONCURRENTLY as X_wfctl_next, X dropped CONCURRENTLY, the new one renamed X
  drop-index     DROP INDEX CONCURRENTLY
  dedupe         a DELETE that clears duplicates before a unique index: row locks only
  enum-move      a DO block whose only DDL is ALTER TYPE .. SET SCHEMA: catalog only, no lock
                 on any table
  create-table   CREATE TABLE IF NOT EXISTS: a new table, no lock on a live one

Each step re-reads the catalog before acting, so a rerun after `kill -9` converges; after its
statements, each migration's row is recorded exactly as drizzle records it (hash, created_at
= journal `when`), in journal order, so the package's migrator afterwards applies nothing.
Where the road stands is kept as the comment of drizzle's bookkeeping table while it runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.connection.db import Target, connect, query_error, read_only
from wfctl.errors import ExitStatus, RefusedError, UsageError, WfctlError
from wfctl.migrate import inflight, locks, recognise
from wfctl.migrate import state as state_mod
from wfctl.migrate.events import Reporter
from wfctl.migrate.inflight import RunFate
from wfctl.migrate.package import Migration, Package
from wfctl.migrate.progress import BuildProgress
from wfctl.world import catalog, drizzle, model, releases

MIGRATIONS = "workflow_drizzle.workflow_migrations"
MARKER_PREFIX = "wfctl migrate --online"
NEXT_SUFFIX = "_wfctl_next"

# Run fates that stop the road unless the operator says otherwise (see `RunFate`): `carried`
# runs fail too unless `--carry` rewrites their logs after the schema is done.
BLOCKING_FATES = ("fails", "unknown", "carried")


def blocking(runs: list[RunFate], carry: bool) -> list[RunFate]:
    """The runs in flight that would fail after the road (a carried one is not, with carry)."""
    return [r for r in runs if r.fate in BLOCKING_FATES and not (carry and r.fate == "carried")]


_Q = r'(?:"[^"]+"|[\w$]+)'  # one identifier as written (quoted or not)
_QUAL = r"[a-z_][\w$]*\.[a-z_][\w$]*"  # schema.name, normalised


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Action:
    """One statement of DIR's migration, and how wfctl runs it online."""

    # add-column | build-index | replace-index | drop-index | dedupe | enum-move | create-table
    kind: str
    source: str  # the statement as DIR writes it
    table: str | None  # schema.table it touches
    name: str | None = None  # the column / index / table it makes or removes
    package_lock: str = ""  # what the package's migrator takes for it
    lock: str = ""  # what wfctl's statements take
    how: str = ""  # how wfctl runs it, in words

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sql": " ".join(self.source.split()),
            "table": self.table,
            "object": self.name,
            "package_lock": self.package_lock,
            "lock": self.lock,
            "how": self.how,
        }


class Unrunnable(Exception):
    """A statement wfctl cannot run online; carries the statement."""


_ADD_COLUMN = re.compile(
    rf"^alter table (?P<table>{_QUAL}) add column (?:if not exists )?(?P<column>[a-z_][\w$]*) "
    r"(?P<type>[a-z][a-z0-9_ ()\[\],.]*?)"
    r"(?: default (?P<default>'[^']*'(?:::[a-z_ ]+)?|-?\d+(?:\.\d+)?|true|false|null))?"
    r"(?P<notnull> not null| null)?;$"
)
# Words that would make the "type" of an ADD COLUMN more than a type (a volatile default, a
# constraint that scans, a generated column that rewrites).
_COLUMN_CLAUSE = re.compile(
    r"\b(default|not|null|generated|references|primary|unique|check|collate|constraint"
    r"|identity|always|stored)\b"
)
_CREATE_INDEX = re.compile(
    rf"^create (?P<unique>unique )?index (?:if not exists )?(?P<name>[a-z_][\w$]*) on "
    rf"(?:only )?(?P<table>{_QUAL})(?: using [a-z]+)? ?\(.*;$"
)
_DROP_INDEX = re.compile(r"^drop index (?:if exists )?(?P<index>" + _QUAL + r");$")
_DEDUPE = re.compile(rf"^(?:with .*\)\s?)?delete from (?P<table>{_QUAL}) ")
_DDL = re.compile(
    r"\b(insert|update|drop|alter|create|truncate|grant|revoke|copy|lock|execute|perform|call"
    r"|pg_terminate_backend|pg_cancel_backend|nextval|setval)\b"
)
_DO = re.compile(r"^do \$(\w*)\$(.*)\$\1\$;$")
_ENUM_MOVE = re.compile(r"execute format\('alter type [a-z_.%]+ set schema [a-z_]+',[a-z_]+\);")
_CREATE_TABLE = re.compile(rf"^create table (?:if not exists )?(?P<table>{_QUAL}) ?\(")


def classify(statement: str) -> Action:
    """The online action for one statement of DIR's SQL; `Unrunnable` when there is none."""
    normal = recognise.normalise(re.sub(r"/\*.*?\*/", " ", statement, flags=re.S))
    m = _ADD_COLUMN.match(normal)
    if m:
        if _COLUMN_CLAUSE.search(m["type"]):
            raise Unrunnable(
                statement
            )  # a default, constraint or generation wfctl cannot vouch for
        if m["notnull"] == " not null" and m["default"] in (None, "null"):
            raise Unrunnable(statement)  # would scan the table (and fail on any row)
        table = m["table"]
        return Action(
            "add-column",
            statement,
            table,
            m["column"],
            package_lock=f"ACCESS EXCLUSIVE on {table}, held until its one transaction commits",
            lock=f"ACCESS EXCLUSIVE on {table} for one catalog statement (no rewrite: "
            + ("a constant default)" if m["default"] else "no default)"),
            how="ADD COLUMN IF NOT EXISTS, alone, under lock_timeout with retries",
        )
    m = _CREATE_INDEX.match(normal)
    if m and " concurrently " not in normal:
        table = m["table"]
        return Action(
            "build-index",
            statement,
            table,
            f"{table.split('.')[0]}.{m['name']}",
            package_lock=f"SHARE on {table} for the whole build (writes wait), inside the "
            "migrator's one transaction that also holds every earlier statement's locks",
            lock=f"SHARE UPDATE EXCLUSIVE on {table}: reads and writes go on",
            how="CREATE INDEX CONCURRENTLY outside a transaction; an INVALID leftover is "
            "dropped concurrently first",
        )
    m = _DROP_INDEX.match(normal)
    if m:
        return Action(
            "drop-index",
            statement,
            None,
            m["index"],
            package_lock="ACCESS EXCLUSIVE on the index's table until the migrator commits",
            lock="SHARE UPDATE EXCLUSIVE on the table: reads and writes go on",
            how="DROP INDEX CONCURRENTLY IF EXISTS",
        )
    m = _DEDUPE.match(normal)
    if m and not _DDL.search(normal):
        table = m["table"]
        return Action(
            "dedupe",
            statement,
            table,
            package_lock=f"ROW EXCLUSIVE on {table} plus the deleted rows, until the migrator "
            "commits",
            lock=f"ROW EXCLUSIVE on {table} and the duplicate rows it deletes: other writers go on",
            how="as written, in its own transaction, only while the unique index it prepares "
            "is not built",
        )
    m = _DO.match(normal)
    if m and "set schema" in normal:
        body = _ENUM_MOVE.sub("", m[2])
        if not _DDL.search(body) and " delete " not in f" {body} ":
            return Action(
                "enum-move",
                statement,
                None,
                package_lock="the enum types it moves (catalog only)",
                lock="the enum types it moves (catalog only; no table is locked)",
                how="as written (its own checks make it idempotent), under lock_timeout",
            )
    m = _CREATE_TABLE.match(normal)
    if m:
        return Action(
            "create-table",
            statement,
            m["table"],
            m["table"],
            package_lock="none on existing tables",
            lock="none on existing tables",
            how="CREATE TABLE IF NOT EXISTS",
        )
    raise Unrunnable(statement)


def actions_of(migration: Migration) -> list[Action]:
    """Every statement of one migration as an action; DROP + CREATE of one index fuse into a
    replace-index (the new definition is built beside the old one before the old one goes)."""
    out: list[Action] = []
    for chunk in migration.chunks():
        for statement in recognise.split_statements(chunk):
            out.append(classify(statement))
    fused: list[Action] = []
    for action in out:
        dropped = next(
            (
                a
                for a in fused
                if a.kind == "drop-index" and action.kind == "build-index" and a.name == action.name
            ),
            None,
        )
        if dropped is not None:
            fused.remove(dropped)
            fused.append(
                Action(
                    "replace-index",
                    action.source,
                    action.table,
                    action.name,
                    package_lock=f"ACCESS EXCLUSIVE on {action.table} (the drop), then the "
                    "build under it: no read or write until the migrator commits",
                    lock=f"SHARE UPDATE EXCLUSIVE on {action.table} for the build and the drop "
                    "(reads and writes go on); the rename takes SHARE UPDATE EXCLUSIVE on the "
                    "new index only",
                    how=f"build the new definition CONCURRENTLY as {_next_name(action.name)}, "
                    "DROP INDEX CONCURRENTLY the old one, rename the new one (under "
                    "lock_timeout): the unique rule is enforced throughout",
                )
            )
        else:
            fused.append(action)
    return fused


def _next_name(qualified: str | None) -> str:
    assert qualified is not None
    schema, name = qualified.split(".", 1)
    return f"{schema}.{name[: 63 - len(NEXT_SUFFIX)]}{NEXT_SUFFIX}"


# ----------------------------------------------------------------------------- runs in flight
def active_runs_unknown(conn: psycopg.Connection[Any], why: str) -> list[RunFate]:
    """Every run in flight with an unknown fate: the fallback when the analysis cannot judge
    the road (a version wfctl has no runtime facts for)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql.load("migrate/road_active_runs")).fetchall()
    return [RunFate(r["run_id"], r["workflow_name"], r["status"], why, "unknown") for r in rows]


# ----------------------------------------------------------------------------- the plan
@dataclass
class Pending:
    migration: Migration
    actions: list[Action]
    drizzle_skips: bool  # drizzle's migrator would never apply it

    @property
    def tag(self) -> str:
        return self.migration.tag


@dataclass
class Step:
    """One action (or the recording) of one migration, as planned or as done."""

    tag: str
    kind: str
    action: str  # run | skip | ran | done
    reason: str
    sql: list[str]
    lock: str
    package_lock: str = ""
    how: str = ""
    seconds: float | None = None
    attempts: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "migration": self.tag,
            "kind": self.kind,
            "action": self.action,
            "reason": self.reason,
            "sql": self.sql,
            "lock": self.lock,
            "package_lock": self.package_lock,
            "how": self.how,
        }
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 3)
        if self.attempts is not None:
            out["attempts"] = self.attempts
        return out


@dataclass(frozen=True)
class RoadOptions:
    package: Package
    dry_run: bool = False
    lock_timeout_ms: int = 1000
    retries: int = 10
    drain: bool = False
    drain_timeout_s: float = 3600.0
    allow_failing_runs: bool = False
    carry: bool = False  # rewrite the logs of runs the inflight analysis can carry
    poll_s: float = 2.0


@dataclass
class RoadReport:
    database: str
    world: str
    source: str
    target: str
    package: str
    dry_run: bool
    lock_timeout_ms: int
    retries: int
    recorded: list[str] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    drizzle_applies: list[str] = field(default_factory=list)
    drizzle_skips: list[str] = field(default_factory=list)
    newest_recorded: str | None = None
    runs: list[RunFate] = field(default_factory=list)
    runs_note: str = ""
    runs_policy: str = ""
    steps: list[Step] = field(default_factory=list)
    lock_holder: str | None = None
    resumed_from: str | None = None
    catalog_release: str | None = None
    catalog_drift: list[str] = field(default_factory=list)
    # Differences no online step can undo: columns another migrator appended before the ones
    # wfctl adds (ADD COLUMN appends; only a table rewrite reorders). Nothing reads by position.
    column_order: list[str] = field(default_factory=list)
    carried: list[dict[str, Any]] = field(default_factory=list)  # outcomes of --carry
    privileges: list[str] = field(default_factory=list)  # missing grants (dry run)
    advice: str = ""

    @property
    def status(self) -> ExitStatus:
        refused = any(c["outcome"] == "refused" for c in self.carried)
        return ExitStatus.WARNING if self.catalog_drift or refused else ExitStatus.OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": "road",
            "database": self.database,
            "world": self.world,
            "source": self.source,
            "target": self.target,
            "package": self.package,
            "dry_run": self.dry_run,
            "lock_timeout_ms": self.lock_timeout_ms,
            "retries": self.retries,
            "recorded": self.recorded,
            "newest_recorded": self.newest_recorded,
            "pending": self.pending,
            "drizzle_applies": self.drizzle_applies,
            "drizzle_skips": self.drizzle_skips,
            "runs_in_flight": [r.__dict__ for r in self.runs],
            "runs_note": self.runs_note,
            "runs_policy": self.runs_policy,
            "steps": [s.as_dict() for s in self.steps],
            "lock_holder": self.lock_holder,
            "resumed_from": self.resumed_from,
            "catalog_release": self.catalog_release,
            "catalog_drift": self.catalog_drift,
            "column_order": self.column_order,
            "carried": self.carried,
            "missing_privileges": self.privileges,
            "advice": self.advice,
        }


_MARKED_SOURCE = re.compile(r" from (\S+) to ")


def _source(world: model.World, marker: str | None) -> str:
    """The release the road starts from: the world's, else (a stopped road, whose journal is
    no release's) the one the marker names."""
    if world.release is None and marker:
        m = _MARKED_SOURCE.search(marker)
        if m:
            return m[1]
    return version_of(world)


def version_of(world: model.World) -> str:
    """The package version a world was made by, as far as its rows tell (for the runs'
    analysis): the pinned or recorded version, else the newest of the versions its journal
    allows (each 4.x and 5.0 line shares its id rules: wfctl.migrate.inflight), else its era."""
    release = world.release
    if release is not None:
        return release.candidates[-1] if release.candidates else release.checked.split()[0]
    return world.era


def target_release(package: Package) -> releases.Release | None:
    """The release of DIR's version, when wfctl has read that version (its catalog is the
    proof that the road arrived)."""
    version = package.version
    return releases.of_version(version) if version in releases.PACKAGES else None


class Road:
    """One invocation of `wfctl migrate --online --package DIR` (the general road)."""

    def __init__(
        self,
        target: Target,
        reporter: Reporter,
        options: RoadOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.target = target
        self.reporter = reporter
        self.options = options
        self.sleep = sleep
        self.locks = locks.LockPolicy.for_target(target, options, reporter.say, sleep=sleep)
        self._probes: dict[str, str | None] = {}
        self._user = "this role"
        self._source = "unknown"

    # ------------------------------------------------------------------------- entry
    def run(self) -> RoadReport:
        with connect(self.target, autocommit=True) as conn:
            try:
                return self._run(conn)
            except psycopg.Error as exc:
                raise query_error(exc, self.target, "migrating") from None

    def _run(self, conn: psycopg.Connection[Any]) -> RoadReport:
        opts = self.options
        with read_only(conn):
            world = model.inspect(conn, with_drift=False)
            st = state_mod.read(conn)
            marker = _marker(conn)
        world.require_present()
        world.require_complete()
        world.require_visible("plan a migration")  # runs in flight are judged from their rows
        self._user = world.user
        if not st.has_migrations_table:
            raise WfctlError(
                f"database {world.database!r} has no drizzle bookkeeping "
                f"({MIGRATIONS}): wfctl cannot tell which migrations it holds",
                hint="nothing was written; a world made by the package's setup records them",
            )
        pending, recorded = self._pending(st)
        self._source = _source(world, marker)
        report = RoadReport(
            database=world.database,
            world=world.kind,
            source=self._source,
            target=opts.package.version or "unknown",
            package=opts.package.label,
            dry_run=opts.dry_run,
            lock_timeout_ms=opts.lock_timeout_ms,
            retries=opts.retries,
            recorded=recorded,
            resumed_from=marker,
        )
        newest = max(st.recorded, key=lambda r: r.created_at or -1, default=None)
        if newest is not None:
            tag = next(
                (e.tag for e in opts.package.entries if e.when == newest.created_at),
                f"when {newest.created_at}",
            )
            report.newest_recorded = f"{tag} (when {newest.created_at})"
        report.drizzle_skips = [p.tag for p in pending if p.drizzle_skips]
        report.drizzle_applies = [p.tag for p in pending if not p.drizzle_skips]
        report.pending = [
            {
                "tag": p.tag,
                "when": p.migration.when,
                "hash": p.migration.sha256,
                "drizzle_skips": p.drizzle_skips,
                "statements": [a.as_dict() for a in p.actions],
            }
            for p in pending
        ]
        release = target_release(opts.package)
        report.catalog_release = release.key if release else None
        if not opts.dry_run:
            world.require_writable("migrate the world", world=False)
            self._check_privileges(conn, pending)
        self._assess_runs(conn, world, report)
        holder = state_mod.advisory_holder(conn)
        if opts.dry_run:
            report.lock_holder = holder.describe() if holder else None
            report.steps = [s for p in pending for s in self._plan(conn, p)]
            report.privileges = self._missing_privileges(conn, pending)
            report.advice = _advice(report, pending)
            return report
        if not pending:
            report.advice = "nothing to do: every migration of DIR is recorded"
            # A marker left by a road that stopped after its last record; never a running one's.
            self._finish(conn, report, clear_marker=marker is not None and holder is None)
            return report
        if st.server_version_num >= 140000:
            conn.execute(sql.load("migrate/watch_client"))
        locks.acquire(conn)
        try:
            self._gate_runs(conn, world, report)
            self.reporter.say(
                f"wfctl migrate --online: {world.kind} -> {report.target} "
                f"({len(pending)} migrations)" + (f"; resuming ({marker})" if marker else "")
            )
            for n, p in enumerate(pending, 1):
                self.reporter.say(f"[{n}/{len(pending)}] {p.tag}")
                report.steps.extend(self._apply(conn, p, report.target))
            self._finish(conn, report, clear_marker=True)
            self._carry(conn, report)
        finally:
            locks.release(conn)
        report.advice = (
            "done: the package's own migrator will find nothing to apply"
            if not report.catalog_drift
            else "done, but the catalog differs from a fresh world of the target (listed)"
        )
        return report

    # ------------------------------------------------------------------------- reading
    def _pending(self, st: state_mod.KeyState) -> tuple[list[Pending], list[str]]:
        """DIR's entries not recorded, in journal order; refuse rows DIR does not ship."""
        package = self.options.package
        by_hash: dict[tuple[str, int], Migration] = {}
        for entry in package.entries:
            m = package.migration(entry)
            by_hash[(m.sha256, m.when)] = m
        known_whens = {e.when: e for e in package.entries}
        recorded_tags: list[str] = []
        strangers = []
        for row in st.recorded:
            hit = by_hash.get((row.hash, row.created_at or -1))
            if hit is None:
                strangers.append(row)
            else:
                recorded_tags.append(hit.tag)
        if strangers:
            newest_when = max((e.when for e in package.entries), default=0)
            if any((r.created_at or 0) > newest_when for r in strangers):
                names = ", ".join(f"{drizzle.identify(r.hash, r.created_at)}" for r in strangers)
                raise RefusedError(
                    f"refused: a downgrade. The world records {len(strangers)} migration(s) "
                    f"that {package.label} does not ship, some newer than all it ships "
                    f"({names})",
                    hint="nothing was written; give the package the world was made by, or a "
                    "newer one",
                )
            r = strangers[0]
            clash = known_whens.get(r.created_at or -1)
            what = (
                f"has the `when` of {clash.tag} but another hash ({r.hash[:12]}…)"
                if clash
                else f"(hash {r.hash[:12]}…, created_at {r.created_at}) is not in its journal"
            )
            raise WfctlError(
                f"the world records a migration {package.label} does not ship: it {what}",
                hint="nothing was written; wfctl applies only what it can match row by row "
                "(`wfctl info` names the recorded migrations)",
            )
        floor = st.max_created_at if st.max_created_at is not None else -1
        done = set(recorded_tags)
        pending: list[Pending] = []
        for entry in package.entries:
            if entry.tag in done:
                continue
            migration = package.migration(entry)
            try:
                actions = actions_of(migration)
            except Unrunnable as exc:
                raise RefusedError(
                    f"{package.label}: pending {migration.tag} has a statement wfctl cannot run "
                    f"online: {_short(str(exc.args[0]))}",
                    hint="nothing was written; wfctl never guesses what a statement locks. "
                    "`wfctl migrate status --package DIR` lists each pending statement",
                ) from None
            pending.append(Pending(migration, actions, migration.when <= floor))
        return pending, recorded_tags

    def _check_privileges(self, conn: psycopg.Connection[Any], pending: list[Pending]) -> None:
        missing = self._missing_privileges(conn, pending)
        if missing:
            raise RefusedError(
                f"role {self._user!r} lacks what the road needs: {'; '.join(missing)}",
                hint="nothing was written; connect as the world's owner, or GRANT those "
                "(ALTER TABLE and CREATE INDEX need the table's owner role)",
            )

    def _missing_privileges(
        self, conn: psycopg.Connection[Any], pending: list[Pending]
    ) -> list[str]:
        """Each grant the road needs and this role lacks, as `object: what`."""
        if not pending:
            return []
        tables = sorted(
            {a.table for p in pending for a in p.actions if a.table and a.kind != "create-table"}
            | {MIGRATIONS}
        )
        kinds = [(a.kind, a.table) for p in pending for a in p.actions]
        schemas = sorted(
            {t.split(".")[0] for k, t in kinds if k == "create-table" and t}
            | ({"workflow"} if any(k == "enum-move" for k, _ in kinds) else set())
        )
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                sql.load("migrate/road_privileges"), {"tables": tables, "schemas": schemas}
            ).fetchall()
        return [f"{r['object']}: {r['needs']}" for r in rows]

    # ------------------------------------------------------------------------- runs
    def _assess_runs(
        self, conn: psycopg.Connection[Any], world: model.World, report: RoadReport
    ) -> None:
        try:
            with read_only(conn):
                report.runs = inflight.assess(conn, report.source, report.target)
        except WfctlError as exc:
            missing = f"runs not assessed ({exc.message})"
            report.runs = active_runs_unknown(conn, missing)
            report.runs_note = f"{missing}: every run in flight is counted as one that may fail"
        opts = self.options
        failing = blocking(report.runs, opts.carry)
        carried = [r for r in report.runs if r.fate == "carried"] if opts.carry else []
        if not failing:
            report.runs_policy = "no run in flight would fail" + (
                f"; --carry rewrites {len(carried)} run(s) after the schema" if carried else ""
            )
        elif opts.allow_failing_runs:
            report.runs_policy = (
                f"--allow-failing-runs: going on; {len(failing)} run(s) will fail (named)"
            )
        elif opts.drain:
            report.runs_policy = (
                f"--drain: waiting (up to {opts.drain_timeout_s:.0f} s) for {len(failing)} "
                "run(s) to end before writing"
            )
        else:
            report.runs_policy = (
                f"refused: {len(failing)} run(s) in flight would fail; give --drain to wait for "
                "them, --carry where the analysis can carry them, or --allow-failing-runs"
            )

    def _gate_runs(
        self, conn: psycopg.Connection[Any], world: model.World, report: RoadReport
    ) -> None:
        """Before the first write: refuse, wait (--drain) or go on past failing runs."""
        opts = self.options
        started = time.monotonic()
        while True:
            failing = blocking(report.runs, opts.carry)
            if not failing or opts.allow_failing_runs:
                for r in failing:
                    self.reporter.say(
                        f"    run {r.run_id} ({r.workflow_name}) will fail: {r.reason}"
                    )
                return
            named = ", ".join(f"{r.run_id} ({r.workflow_name}, {r.status})" for r in failing[:5])
            more = f" and {len(failing) - 5} more" if len(failing) > 5 else ""
            if not opts.drain:
                raise RefusedError(
                    f"{len(failing)} run(s) in flight would fail after the upgrade: {named}{more}",
                    hint="nothing was written; --drain waits for them to end, --carry "
                    "rewrites those the analysis can carry, --allow-failing-runs lets them fail",
                )
            waited = time.monotonic() - started
            if waited >= opts.drain_timeout_s:
                raise RefusedError(
                    f"--drain: {len(failing)} run(s) still in flight after {waited:.0f} s: "
                    f"{named}{more}",
                    hint="nothing was written; rerun later, or raise --drain-timeout",
                )
            self.reporter.say(
                f"    draining: {len(failing)} run(s) in flight would fail ({named}{more}); "
                f"waited {waited:.0f} s"
            )
            self.sleep(opts.poll_s)
            self._assess_runs(conn, world, report)

    def _carry(self, conn: psycopg.Connection[Any], report: RoadReport) -> None:
        """--carry: after the schema, rewrite the logs of the runs the analysis can carry
        (one transaction per run, re-checked under the run's lock, audited)."""
        if not self.options.carry:
            return
        with read_only(conn):
            fresh = inflight.assess(conn, report.source, report.target)
        ids = [r.run_id for r in fresh if r.fate == "carried"]
        if not ids:
            return
        self.reporter.say(f"carrying {len(ids)} run(s) across to {report.target}")
        outcomes = inflight.carry(
            conn,
            ids,
            report.source,
            report.target,
            reason=f"wfctl migrate --online --carry to {report.target}",
        )
        report.carried = [
            {"run_id": str(c.run_id), "outcome": str(c.outcome), "reason": str(c.reason)}
            for c in outcomes
        ]

    # ------------------------------------------------------------------------- decisions
    def _index(self, conn: psycopg.Connection[Any], name: str) -> dict[str, Any] | None:
        with conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql.load("migrate/road_index"), {"index": name}).fetchone()

    def _probe(self, conn: psycopg.Connection[Any], action: Action) -> str | None:
        """How the server prints the index `action` defines (None: it could not be probed)."""
        if action.source in self._probes:
            return self._probes[action.source]
        assert action.table is not None
        schema, table = action.table.split(".", 1)
        statement = _index_sql(
            action.source, "wfctl_road_probe_idx", "pg_temp.wfctl_road_probe", concurrently=False
        )
        shape: str | None = None
        try:
            with conn.transaction(force_rollback=True):
                conn.execute(
                    pgsql.SQL(sql.load("migrate/road_probe_table")).format(
                        table=pgsql.Identifier(schema, table)
                    )
                )
                conn.execute(statement.encode())
                row = conn.execute(sql.load("migrate/road_probe_index")).fetchone()
                shape = _shape(row[0]) if row and row[0] else None
        except psycopg.Error:
            shape = None
        self._probes[action.source] = shape
        return shape

    def decide(self, conn: psycopg.Connection[Any], p: Pending, action: Action) -> tuple[bool, str]:
        """Whether `action` still has work to do, and why; reads the catalog only."""
        kind = action.kind
        if kind == "add-column":
            assert action.table is not None and action.name is not None
            row = conn.execute(
                sql.load("migrate/road_column"), {"table": action.table, "column": action.name}
            ).fetchone()
            if row and row[0]:
                return False, f"{action.table}.{action.name} exists"
            return True, f"adds {action.table}.{action.name}"
        if kind == "create-table":
            assert action.name is not None
            row = conn.execute(sql.load("migrate/road_table"), {"table": action.name}).fetchone()
            return (False, f"{action.name} exists") if row and row[0] else (True, "new table")
        if kind == "drop-index":
            assert action.name is not None
            return (
                (True, f"drops {action.name}")
                if self._index(conn, action.name)
                else (False, f"{action.name} is gone")
            )
        if kind == "enum-move":
            return True, "moves the enums the block names (a no-op where already moved)"
        if kind == "dedupe":
            target = next(
                (a for a in p.actions if a.kind in ("build-index", "replace-index")), None
            )
            if target is not None:
                run, _ = self.decide(conn, p, target)
                if not run:
                    return False, f"{target.name} is built: no duplicate can exist"
            return True, "clears duplicates the unique index would refuse"
        assert action.name is not None
        live = self._index(conn, action.name)
        want = self._probe(conn, action)
        if kind == "build-index":
            if live is None:
                return True, f"builds {action.name}"
            if not live["valid"]:
                return True, f"an INVALID {action.name} (a killed build): dropped and rebuilt"
            if want is not None and _shape(live["definition"]) != want:
                return False, (
                    f"{action.name} exists with another definition; left as the package's "
                    "IF NOT EXISTS leaves it"
                )
            return False, f"{action.name} exists, valid"
        # replace-index
        if live is not None and live["valid"] and want and _shape(live["definition"]) == want:
            return False, f"{action.name} already has the new definition"
        nxt = self._index(conn, _next_name(action.name))
        if nxt is not None and nxt["valid"]:
            return True, f"{_next_name(action.name)} is built: swap it in"
        return True, f"replaces {action.name} with DIR's definition"

    def _sql_of(self, action: Action) -> list[str]:
        """The statements wfctl sends for `action` (for the plan)."""
        kind = action.kind
        if kind == "add-column":
            return [_add_column_sql(action.source)]
        if kind == "build-index":
            assert action.name is not None
            return [
                f"DROP INDEX CONCURRENTLY IF EXISTS {action.name}  -- only an INVALID leftover",
                _index_sql(action.source, action.name.split(".", 1)[1], None, concurrently=True),
            ]
        if kind == "replace-index":
            assert action.name is not None
            nxt = _next_name(action.name)
            return [
                _index_sql(action.source, nxt.split(".", 1)[1], None, concurrently=True),
                f"DROP INDEX CONCURRENTLY IF EXISTS {action.name}",
                f"ALTER INDEX {nxt} RENAME TO {action.name.split('.', 1)[1]}",
            ]
        if kind == "drop-index":
            return [f"DROP INDEX CONCURRENTLY IF EXISTS {action.name}"]
        if kind == "create-table":
            return [_create_table_sql(action.source)]
        return [" ".join(action.source.split()) if kind == "dedupe" else action.source.strip()]

    def _lock_text(self, action: Action) -> str:
        bounded = action.kind in ("add-column", "enum-move", "replace-index", "dedupe")
        if not bounded:
            return action.lock
        return (
            f"{action.lock}; lock_timeout {self.options.lock_timeout_ms} ms, up to "
            f"{self.options.retries} retries with jittered backoff"
        )

    def _plan(self, conn: psycopg.Connection[Any], p: Pending) -> list[Step]:
        steps = []
        for action in p.actions:
            run, why = self.decide(conn, p, action)
            steps.append(
                Step(
                    p.tag,
                    action.kind,
                    "run" if run else "skip",
                    why,
                    self._sql_of(action),
                    self._lock_text(action),
                    action.package_lock,
                    action.how,
                )
            )
        steps.append(
            Step(
                p.tag,
                "record",
                "run",
                f"hash {p.migration.sha256[:12]}…, created_at {p.migration.when} (as drizzle "
                "records it)",
                [
                    f"INSERT INTO {MIGRATIONS} (hash, created_at) VALUES "
                    f"('{p.migration.sha256}', {p.migration.when})"
                ],
                f"SHARE ROW EXCLUSIVE on {MIGRATIONS} (only another migrator's bookkeeping "
                "waits); lock_timeout with retries",
            )
        )
        return steps

    # ------------------------------------------------------------------------- execution
    def _apply(self, conn: psycopg.Connection[Any], p: Pending, target: str) -> list[Step]:
        steps = []
        for n, action in enumerate(p.actions, 1):
            self._mark(
                conn,
                f"{MARKER_PREFIX} from {self._source} to {target}: at {p.tag}, step {n} "
                f"({action.kind})",
            )
            run, why = self.decide(conn, p, action)
            step = Step(
                p.tag,
                action.kind,
                "ran" if run else "done",
                why,
                self._sql_of(action),
                self._lock_text(action),
                action.package_lock,
            )
            if run:
                self.reporter.say(f"    {action.kind}: {why}")
                started = time.monotonic()
                step.attempts = getattr(self, "_do_" + action.kind.replace("-", "_"))(conn, action)
                step.seconds = time.monotonic() - started
            else:
                self.reporter.say(f"    {action.kind}: skipped, {why}")
            steps.append(step)
        step = Step(p.tag, "record", "ran", "", [], f"SHARE ROW EXCLUSIVE on {MIGRATIONS}")
        started = time.monotonic()
        step.attempts, wrote = self._record(conn, p.migration)
        step.seconds = time.monotonic() - started
        step.action = "ran" if wrote else "done"
        step.reason = (
            f"recorded hash {p.migration.sha256[:12]}…, created_at {p.migration.when}"
            if wrote
            else "already recorded"
        )
        steps.append(step)
        return steps

    def _do_add_column(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.table is not None
        text = _add_column_sql(action.source)
        return self.locks.run(conn, action.table, lambda: _exec(conn, text))

    def _do_create_table(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.table is not None
        text = _create_table_sql(action.source)
        return self.locks.run(conn, action.table, lambda: _exec(conn, text))

    def _do_enum_move(self, conn: psycopg.Connection[Any], action: Action) -> int:
        return self.locks.run(conn, MIGRATIONS, lambda: _exec(conn, action.source))

    def _do_dedupe(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.table is not None

        def delete() -> None:
            with conn.transaction():
                conn.execute(action.source.encode())

        return self.locks.run(conn, action.table, delete, statement_ms=0)

    def _do_drop_index(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.name is not None
        self._drop_concurrently(conn, action.name)
        return 1

    def _do_build_index(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.name is not None
        self._build(conn, action, action.name)
        return 1

    def _do_replace_index(self, conn: psycopg.Connection[Any], action: Action) -> int:
        assert action.name is not None and action.table is not None
        nxt = _next_name(action.name)
        want = self._probe(conn, action)
        built = self._index(conn, nxt)
        if built is not None and (
            not built["valid"] or want is None or _shape(built["definition"]) != want
        ):
            built = None  # an INVALID or foreign leftover: _build drops it
        if built is None:
            self._build(conn, action, nxt)
        if self._index(conn, action.name) is not None:
            self._drop_concurrently(conn, action.name)
        schema, name = action.name.split(".", 1)
        rename = pgsql.SQL("ALTER INDEX {} RENAME TO {}").format(
            pgsql.Identifier(schema, nxt.split(".", 1)[1]), pgsql.Identifier(name)
        )
        return self.locks.run(conn, action.table, lambda: _exec(conn, rename))

    def _build(self, conn: psycopg.Connection[Any], action: Action, name: str) -> None:
        """CREATE INDEX CONCURRENTLY `name` from DIR's statement; drop an INVALID one first."""
        live = self._index(conn, name)
        if live is not None:
            if live["builders"]:
                raise RefusedError(
                    f"{name} is being built by pid {', '.join(map(str, live['builders']))}",
                    hint="wait for that session, or cancel it; then rerun",
                )
            self._drop_concurrently(conn, name)
        text = _index_sql(action.source, name.split(".", 1)[1], None, concurrently=True)
        pid = state_mod.read(conn).pid
        self.locks.limits(conn, 0, 0)  # its lock blocks no read or write: no timeouts
        try:
            with BuildProgress(self.target, self.reporter, pid, f"building {name}"):
                conn.execute(text.encode())
        except psycopg.Error as exc:
            err = query_error(exc, self.target, f"building {name}")
            err.hint = (
                f"the failed build leaves an INVALID {name}; a rerun drops and rebuilds it"
                + (" (remove the duplicate rows first)" if exc.sqlstate == "23505" else "")
            )
            raise err from None
        finally:
            self.locks.restore(conn)

    def _drop_concurrently(self, conn: psycopg.Connection[Any], name: str) -> None:
        schema, index = name.split(".", 1)
        self.locks.limits(conn, self.target.timeouts.statement_ms, 0)
        try:
            conn.execute(
                pgsql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                    pgsql.Identifier(schema, index)
                )
            )
        finally:
            self.locks.restore(conn)

    def _record(self, conn: psycopg.Connection[Any], migration: Migration) -> tuple[int, bool]:
        wrote = [False]

        def record() -> None:
            wrote[0] = False
            with conn.transaction():
                conn.execute(sql.load("migrate/lock_migrations_table"))
                fresh = state_mod.read(conn)  # inside the lock: no other migrator records now
                if not fresh.has_record(migration.sha256, migration.when):
                    conn.execute(
                        sql.load("migrate/record_migration"),
                        {"hash": migration.sha256, "created_at": migration.when},
                    )
                    wrote[0] = True

        attempts = self.locks.run(conn, MIGRATIONS, record)
        return attempts, wrote[0]

    def _mark(self, conn: psycopg.Connection[Any], text: str | None) -> None:
        statement = pgsql.SQL(sql.load("migrate/road_marker_write")).format(
            marker=pgsql.Literal(text)
        )
        self.locks.run(conn, MIGRATIONS, lambda: _exec(conn, statement))

    def _finish(
        self, conn: psycopg.Connection[Any], report: RoadReport, *, clear_marker: bool
    ) -> None:
        if clear_marker:
            self._mark(conn, None)
        release = target_release(self.options.package)
        if release is not None:
            with read_only(conn):
                found = catalog.compare(conn, release.expected_catalog)
            report.column_order = [d.text for d in found if d.change == "order"]
            report.catalog_drift = [d.text for d in found if d.change != "order"]


# ----------------------------------------------------------------------------- helpers
def _exec(conn: psycopg.Connection[Any], statement: str | pgsql.Composed) -> None:
    """Send DIR's statement (or wfctl's composed one) as is: no parameters, so a `%` in a DO
    block is not taken for a placeholder."""
    conn.execute(statement.encode() if isinstance(statement, str) else statement)


def _marker(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute(sql.load("migrate/road_marker_read")).fetchone()
    text = row[0] if row else None
    return text if isinstance(text, str) and text.startswith(MARKER_PREFIX) else None


def verdict(package: Package, st: state_mod.KeyState) -> str:
    """Whether the road can take the world to `package` (for `wfctl migrate status`)."""
    recorded = {r.created_at for r in st.recorded}  # the road itself checks the hashes
    floor = st.max_created_at if st.max_created_at is not None else -1
    todo: list[str] = []
    skipped = 0
    for entry in package.entries:
        if entry.when in recorded:
            continue
        try:
            migration = package.migration(entry)
            actions_of(migration)
        except Unrunnable as exc:
            return f"refused: {entry.tag} has {_short(str(exc.args[0]), 80)}"
        except WfctlError as exc:
            return f"refused: {exc.message}"
        todo.append(migration.tag)
        skipped += migration.when <= floor
    if not todo:
        return "nothing to do: every migration of the package is recorded"
    never = f"; {skipped} of them never applied by the package's migrator" if skipped else ""
    return (
        f"possible: `wfctl migrate --online --package DIR` applies {', '.join(todo)} online{never}"
    )


def marker(conn: psycopg.Connection[Any]) -> str | None:
    """Where an interrupted road stopped (None: no road in progress)."""
    return _marker(conn)


_ADD_COLUMN_RAW = re.compile(r"(?i)\badd\s+column\s+(?!if\s+not\s+exists\b)")
_CREATE_TABLE_RAW = re.compile(r"(?i)^\s*create\s+table\s+(?!if\s+not\s+exists\b)")
_INDEX_RAW = re.compile(
    rf"(?is)^\s*create\s+(unique\s+)?index\s+(?:if\s+not\s+exists\s+)?{_Q}\s+on\s+"
    rf"(?:only\s+)?(?P<table>{_Q}\s*\.\s*{_Q})(?P<rest>.*?);?\s*$"
)


def _add_column_sql(source: str) -> str:
    return _ADD_COLUMN_RAW.sub("ADD COLUMN IF NOT EXISTS ", source.strip(), count=1)


def _create_table_sql(source: str) -> str:
    return _CREATE_TABLE_RAW.sub("CREATE TABLE IF NOT EXISTS ", source.strip(), count=1)


def _index_sql(source: str, name: str, table: str | None, *, concurrently: bool) -> str:
    """DIR's CREATE INDEX with another name (and table), CONCURRENTLY, without IF NOT EXISTS
    (wfctl decides itself whether the index is there: an INVALID one must not count)."""
    m = _INDEX_RAW.match(source)
    if m is None:
        raise UsageError(f"cannot rewrite the index statement: {_short(source)}")
    unique = "UNIQUE " if m.group(1) else ""
    how = "CONCURRENTLY " if concurrently else ""
    on = table if table is not None else m["table"]
    quoted = '"' + name.replace('"', '""') + '"'
    return f"CREATE {unique}INDEX {how}{quoted} ON {on}{m['rest'].rstrip()}"


_DEF = re.compile(r"^(CREATE (?:UNIQUE )?INDEX) \S+ ON (?:ONLY )?\S+ ")


def _shape(definition: str) -> str:
    """pg_get_indexdef without the index's and table's names, for comparing definitions."""
    return _DEF.sub(r"\1 ? ON ? ", definition)


def _short(text: str, limit: int = 120) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _advice(report: RoadReport, pending: list[Pending]) -> str:
    if not pending:
        return "nothing to do: every migration of DIR is recorded"
    if report.runs_policy.startswith("refused"):
        return report.runs_policy
    return "run it without --dry-run; afterwards the package's own migrator finds nothing to apply"
