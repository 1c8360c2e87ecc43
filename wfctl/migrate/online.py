"""`wfctl migrate --online`: prepare the event-key swap, and with `--swap` perform it.

Phases (each re-reads the catalog first and is skipped when it already happened, so a rerun
after SIGKILL, a lost connection or a cancelled backend converges):

prepare
  check-duplicates    (run_id, id) duplicates would make the key impossible; ruled out by a
                      valid unique (id) index, otherwise looked for (ACCESS SHARE)
  drop-invalid-index  an INVALID leftover of a failed concurrent build: DROP INDEX CONCURRENTLY
  build-index         CREATE UNIQUE INDEX CONCURRENTLY workflow_events_run_id_id_idx, outside any
                      transaction, statement_timeout off, progress on stderr
  verify-index        valid, ready, exactly UNIQUE (run_id, id)
swap (`--swap --package DIR`, only for pending migrations wfctl recognises)
  hook-column         0018's nullable column, one catalog statement under lock_timeout
  swap-key            DROP CONSTRAINT + ADD CONSTRAINT ... USING INDEX: one catalog statement
                      under lock_timeout, bounded retries with jittered backoff
  drop-run-id-index   DROP INDEX CONCURRENTLY of the redundant (run_id) index
  create-event-slots  CREATE TABLE IF NOT EXISTS workflow.workflow_event_slots
  record-migrations   the replaced migrations' rows (hash, journal `when`) in drizzle's table

Never holds ACCESS EXCLUSIVE for longer than one catalog statement and never runs inside a
long transaction. A session-level advisory lock keeps two wfctl migrations apart.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.connection.db import Target, connect, query_error, read_only
from wfctl.errors import ExitStatus, RefusedError, WfctlError
from wfctl.migrate import locks, recognise
from wfctl.migrate import state as state_mod
from wfctl.migrate.events import Reporter
from wfctl.migrate.package import Migration, Package
from wfctl.migrate.progress import BuildProgress
from wfctl.migrate.state import KeyState
from wfctl.world import catalog, drizzle, model

EVENTS = "workflow.workflow_events"
HOOKS = "workflow.workflow_hooks"
MIGRATIONS = "workflow_drizzle.workflow_migrations"
RUN_THE_MIGRATOR = (
    "run the package's migrator now; it adopts this index and its exclusive lock covers "
    "only catalog work"
)


@dataclass(frozen=True)
class Options:
    swap: bool = False
    package: Package | None = None
    dry_run: bool = False
    lock_timeout_ms: int = 1000
    retries: int = 10
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0


@dataclass(frozen=True)
class StepInfo:
    name: str
    phase: str  # prepare | swap
    sql_name: str | None
    lock: str


CONCURRENT = "SHARE UPDATE EXCLUSIVE on workflow.workflow_events: reads and writes continue"
STEPS: tuple[StepInfo, ...] = (
    StepInfo(
        "check-duplicates",
        "prepare",
        "migrate/duplicates",
        "ACCESS SHARE on workflow.workflow_events (a read; only when (id) is not unique)",
    ),
    StepInfo("drop-invalid-index", "prepare", "migrate/drop_key_index", CONCURRENT),
    StepInfo(
        "build-index", "prepare", "migrate/build_key_index", CONCURRENT + "; statement_timeout off"
    ),
    StepInfo("verify-index", "prepare", None, "none (catalog read)"),
    StepInfo(
        "hook-column",
        "swap",
        "migrate/add_hook_token_retention",
        "ACCESS EXCLUSIVE on workflow.workflow_hooks for one catalog statement",
    ),
    StepInfo(
        "swap-key",
        "swap",
        "migrate/swap_key",
        "ACCESS EXCLUSIVE on workflow.workflow_events for one catalog statement",
    ),
    StepInfo("drop-run-id-index", "swap", "migrate/drop_run_id_index", CONCURRENT),
    StepInfo(
        "create-event-slots",
        "swap",
        "migrate/create_event_slots",
        "none on existing tables (creates workflow.workflow_event_slots)",
    ),
    StepInfo(
        "record-migrations",
        "swap",
        "migrate/record_migration",
        "SHARE ROW EXCLUSIVE on workflow_drizzle.workflow_migrations (only another "
        "migrator's bookkeeping waits)",
    ),
)
LOCKED_STEPS = ("hook-column", "swap-key", "create-event-slots", "record-migrations")


@dataclass
class Replaced:
    """One pending migration and what wfctl makes of it."""

    migration: Migration
    analysis: recognise.Analysis

    @property
    def tag(self) -> str:
        return self.migration.tag

    def as_dict(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "when": self.migration.when,
            "sha256": self.migration.sha256,
            "recognised": self.analysis.recognised,
            "effects": sorted(self.analysis.effects),
            "adopts_prebuilt_index": self.analysis.adopts_prebuilt_index,
        }


@dataclass
class SwapPlan:
    """The package's pending migrations, split into those wfctl replaces and the rest."""

    package: Package
    pending: list[Replaced]
    replaced: list[Replaced]
    remaining: list[Replaced]

    @property
    def effects(self) -> frozenset[str]:
        out: set[str] = set()
        for r in self.replaced:
            out |= r.analysis.effects
        return frozenset(out)

    @property
    def key_migration(self) -> Replaced | None:
        return next((r for r in self.pending if r.analysis.swaps_key), None)

    def to_record(self, st: KeyState) -> list[Replaced]:
        """Replaced migrations the bookkeeping does not cover yet, in journal order."""
        floor = st.max_created_at if st.max_created_at is not None else -1
        return [
            r
            for r in self.replaced
            if r.migration.when > floor and not st.has_record(r.migration.sha256, r.migration.when)
        ]


def analyse_pending(package: Package, st: KeyState) -> list[Replaced]:
    entries = package.pending(st.max_created_at)
    out = []
    for entry in entries:
        migration = package.migration(entry)
        out.append(Replaced(migration, migration.analyse()))
    return out


def plan_swap(package: Package, st: KeyState) -> SwapPlan:
    """Decide which pending migrations `--swap` replaces; refuse anything it cannot reproduce.

    Replaced: every pending migration up to and including the first one that swaps the key
    (recording that one moves max(created_at) past all of them, so each must be done here).
    Each must be recognised statement by statement, and together they must make exactly the
    slot-era key change. Later migrations are left to the package's migrator.
    """
    pending = analyse_pending(package, st)
    key_at = next((i for i, r in enumerate(pending) if r.analysis.swaps_key), None)
    if key_at is None:
        if st.swapped and st.has_event_slots and st.run_id_index is None:
            return SwapPlan(package, pending, [], pending)
        strange = next((r for r in pending if not r.analysis.recognised), None)
        if strange is not None:
            raise _unrecognised(package, strange)
        shown = ", ".join(r.tag for r in pending) or "none"
        raise RefusedError(
            f"{package.label}: no pending migration swaps the event key (pending: {shown})",
            hint="give the slot-era package (5.0.0-beta.32 or later); wfctl never guesses",
        )
    replaced, remaining = pending[: key_at + 1], pending[key_at + 1 :]
    for r in replaced:
        if not r.analysis.recognised:
            raise _unrecognised(package, r)
    plan = SwapPlan(package, pending, replaced, remaining)
    missing = recognise.KEY_SWAP_EFFECTS - plan.effects
    if missing:
        raise RefusedError(
            f"{package.label}: {replaced[-1].tag} swaps the key but does not also "
            f"{', '.join(sorted(missing))}; wfctl knows no such variant",
            hint="run the package's own migrator after `wfctl migrate --online` (prepare)",
        )
    return plan


def _unrecognised(package: Package, r: Replaced) -> RefusedError:
    bad = r.analysis.unknown[0] if r.analysis.unknown else None
    what = f": {_short(bad.text)}" if bad else ""
    return RefusedError(
        f"{package.label}: pending {r.tag} is not a migration wfctl recognises, so the online "
        f"swap cannot replace it (unrecognised statement{what})",
        hint="review it; wfctl never guesses. `wfctl migrate status --package DIR` lists its locks",
    )


def _short(text: str, limit: int = 100) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def statement_text(name: str) -> str:
    """The executable part of `sql/<name>.sql` (its leading comment lines dropped)."""
    lines = [ln for ln in sql.load(name).splitlines() if not ln.lstrip().startswith("--")]
    return "\n".join(lines).strip()


@dataclass
class StepResult:
    name: str
    phase: str
    action: str  # run | ran | skip | done
    reason: str
    sql: str | None
    lock: str
    seconds: float | None = None
    attempts: int | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "phase": self.phase,
            "action": self.action,
            "reason": self.reason,
            "lock": self.lock,
            "sql": self.sql,
        }
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 3)
        if self.attempts is not None:
            out["attempts"] = self.attempts
        if self.rows:
            out["rows"] = self.rows
        return out


@dataclass
class Report:
    database: str
    era_before: str
    mode: str  # prepare | swap
    dry_run: bool
    lock_timeout_ms: int
    retries: int
    steps: list[StepResult] = field(default_factory=list)
    package: str | None = None
    replaced: list[dict[str, Any]] = field(default_factory=list)
    remaining: list[dict[str, Any]] = field(default_factory=list)
    advice: str = ""
    era_after: str | None = None
    catalog_drift: list[str] = field(default_factory=list)
    lock_holder: str | None = None

    @property
    def status(self) -> ExitStatus:
        return ExitStatus.WARNING if self.catalog_drift else ExitStatus.OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "mode": self.mode,
            "dry_run": self.dry_run,
            "era_before": self.era_before,
            "era_after": self.era_after,
            "lock_timeout_ms": self.lock_timeout_ms,
            "retries": self.retries,
            "package": self.package,
            "steps": [s.as_dict() for s in self.steps],
            "replaced": self.replaced,
            "remaining": self.remaining,
            "advice": self.advice,
            "catalog_drift": self.catalog_drift,
            "lock_holder": self.lock_holder,
        }


Decision = tuple[bool, str]


class OnlineMigration:
    """One invocation of `wfctl migrate --online [--swap]`."""

    def __init__(
        self,
        target: Target,
        reporter: Reporter,
        options: Options,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.target = target
        self.reporter = reporter
        self.options = options
        self.locks = locks.LockPolicy.for_target(
            target,
            options,
            self.say,
            sleep=sleep,
            backoff_base_s=options.backoff_base_s,
            backoff_cap_s=options.backoff_cap_s,
            rng=rng,
        )
        self.plan: SwapPlan | None = None
        self.advice_plan: SwapPlan | None = None

    # ----------------------------------------------------------------- entry point
    def run(self) -> Report:
        with connect(self.target, autocommit=True) as conn:
            try:
                return self._run(conn)
            except psycopg.Error as exc:
                raise query_error(exc, self.target, "migrating") from None

    def _run(self, conn: psycopg.Connection[Any]) -> Report:
        with read_only(conn):
            world = model.inspect(conn, with_drift=False)
            st = state_mod.read(conn)
        self._check_world(world, st)
        opts = self.options
        world.require_visible("migrate the event key")
        if not opts.dry_run:
            world.require_writable("migrate the event key", world=False)
        if opts.swap:
            assert opts.package is not None
            self.plan = plan_swap(opts.package, st)
        elif opts.package is not None:
            self.advice_plan = _advice_plan(opts.package, st)
        report = Report(
            database=world.database,
            era_before=world.era,
            mode="swap" if opts.swap else "prepare",
            dry_run=opts.dry_run,
            lock_timeout_ms=opts.lock_timeout_ms,
            retries=opts.retries,
            package=opts.package.label if opts.package else None,
        )
        if self.plan:
            report.replaced = [r.as_dict() for r in self.plan.replaced]
        holder = state_mod.advisory_holder(conn)
        if opts.dry_run:
            report.lock_holder = holder.describe() if holder else None
            report.steps = [self._planned(info, st) for info in self._steps()]
            self._finish(report, st, conn, final=False)
            return report
        self._session_setup(conn, st)
        locks.acquire(conn)
        try:
            self.say(
                f"wfctl migrate --online{' --swap' if opts.swap else ''}: database "
                f"{world.database!r}, {world.kind}, key {st.key_text()}"
            )
            for n, info in enumerate(self._steps(), 1):
                st = state_mod.read(conn)
                result = self._execute(conn, info, st, f"[{n}/{len(self._steps())}]")
                report.steps.append(result)
            st = state_mod.read(conn)
            self._finish(report, st, conn, final=True)
        finally:
            locks.release(conn)
        return report

    def _steps(self) -> tuple[StepInfo, ...]:
        return STEPS if self.options.swap else tuple(s for s in STEPS if s.phase == "prepare")

    # ----------------------------------------------------------------- checks
    def _check_world(self, world: model.World, st: KeyState) -> None:
        if not world.present or not st.has_events:
            raise WfctlError(
                f"database {world.database!r} holds no world (schema `workflow` is missing)",
                hint="check the DSN's database",
            )
        world.require_supports("migrate --online")  # a 4.x release: not from there
        if world.era == "older":
            raise RefusedError(
                "this world has fewer migrations recorded than beta.29 ships",
                hint="bring it to beta.29 first with the package's own migrator",
            )
        if world.era == "unknown" and not self._unknown_rows_are_in_package(st):
            raise RefusedError(
                f"this database holds a {world.kind}: {', '.join(world.unknown_migrations)}",
                hint="give --package DIR of the package that recorded them, or upgrade wfctl",
            )
        if not (st.old_key or st.swapped or st.no_key):
            raise RefusedError(
                f"workflow_events is keyed {st.key_text()}; wfctl expected {state_mod.OLD_KEY[0]} "
                f"{state_mod.OLD_KEY[1]} or {state_mod.NEW_KEY[0]} {state_mod.NEW_KEY[1]}",
                hint="`wfctl info` shows the catalog drift; wfctl does not guess",
            )
        if self.options.swap and not st.has_migrations_table:
            raise RefusedError(
                "workflow_drizzle.workflow_migrations is missing: the swap cannot be recorded",
                hint="a world made by the package's bootstrap or `wfctl bootstrap` has it",
            )

    def _unknown_rows_are_in_package(self, st: KeyState) -> bool:
        package = self.options.package
        if package is None:
            return False
        for row in st.recorded:
            if row.created_at is None or row.created_at <= drizzle.LATEST_KNOWN_WHEN:
                continue
            entry = package.by_record(row.hash, row.created_at)
            if entry is None or package.migration(entry).sha256 != row.hash:
                return False
        return True

    # ----------------------------------------------------------------- decisions
    def decide(self, name: str, st: KeyState) -> Decision:
        """Whether a step must run on this state, and why (raises when it cannot)."""
        if name == "check-duplicates":
            if st.swapped:
                return False, "the key is already (run_id, id)"
            if st.key_index_ok:
                return False, "the valid unique index already rules duplicates out"
            if st.id_is_unique:
                return False, "none possible: a valid unique index keeps id unique"
            return True, "no valid unique index on (id): looking for duplicates"
        if name == "drop-invalid-index":
            if st.key_index != "invalid":
                return False, "no INVALID leftover"
            if st.key_index_builders:
                pids = ", ".join(str(p) for p in st.key_index_builders)
                raise RefusedError(
                    f"workflow_events_run_id_id_idx is being built right now by pid {pids}",
                    hint=f"wait for it, or stop it with SELECT pg_cancel_backend({pids})",
                )
            return True, "an INVALID leftover of a failed concurrent build"
        if name == "build-index":
            if st.swapped:
                return False, "the key is already (run_id, id)"
            if st.key_index == "valid":
                if not st.key_index_ok:
                    raise RefusedError(
                        f"an index named workflow_events_run_id_id_idx exists but is "
                        f"{st.key_index_definition!r}, not UNIQUE (run_id, id)",
                        hint="drop or rename it (DROP INDEX CONCURRENTLY), then rerun",
                    )
                return False, "already built and valid"
            return True, "not built yet"
        if name == "verify-index":
            if st.swapped:
                return False, "the key is already (run_id, id)"
            return True, "check validity and definition"
        if name == "hook-column":
            if st.has_hook_column:
                return False, "workflow_hooks.token_retention_until already exists"
            if recognise.HOOK_TOKEN_RETENTION not in self._effects():
                return False, "the package's pending migrations do not add it"
            return True, "0018 adds it"
        if name == "swap-key":
            if st.swapped:
                return False, "the key is already (run_id, id)"
            if st.no_key:
                return True, "workflow_events has no primary key: adding (run_id, id)"
            return True, "the key is still (id)"
        if name == "drop-run-id-index":
            if not st.swapped and st.run_id_index is not None:
                return True, "redundant once the key is swapped (dropped after the swap)"
            if st.run_id_index is None:
                return False, "already dropped"
            return True, (
                "an INVALID leftover of an interrupted drop"
                if st.run_id_index == "invalid"
                else "redundant: the key leads with run_id"
            )
        if name == "create-event-slots":
            if st.has_event_slots:
                return False, "already exists"
            return True, "the slot marker table"
        if name == "record-migrations":
            assert self.plan is not None
            rows = self.plan.to_record(st)
            if not rows:
                return False, "the replaced migrations are already recorded"
            return True, "so the package's migrator skips " + ", ".join(r.tag for r in rows)
        raise AssertionError(name)

    def _effects(self) -> frozenset[str]:
        return self.plan.effects if self.plan else frozenset()

    def _sql(self, info: StepInfo, st: KeyState) -> str | None:
        if info.name == "swap-key" and st.no_key:
            return statement_text("migrate/add_key")
        return statement_text(info.sql_name) if info.sql_name else None

    def _lock(self, info: StepInfo) -> str:
        if info.name in LOCKED_STEPS:
            return (
                f"{info.lock}; lock_timeout {self.options.lock_timeout_ms} ms, up to "
                f"{self.options.retries} retries with jittered backoff"
            )
        return info.lock

    def _planned(self, info: StepInfo, st: KeyState) -> StepResult:
        run, why = self.decide(info.name, st)
        result = StepResult(
            info.name,
            info.phase,
            "run" if run else "skip",
            why,
            self._sql(info, st),
            self._lock(info),
        )
        if info.name == "record-migrations" and self.plan:
            result.rows = [_record_row(r) for r in self.plan.to_record(st)]
        return result

    # ----------------------------------------------------------------- execution
    def _session_setup(self, conn: psycopg.Connection[Any], st: KeyState) -> None:
        if st.server_version_num >= 140000:
            conn.execute(sql.load("migrate/watch_client"))

    def _execute(
        self, conn: psycopg.Connection[Any], info: StepInfo, st: KeyState, counter: str
    ) -> StepResult:
        run, why = self.decide(info.name, st)
        result = StepResult(
            info.name,
            info.phase,
            "ran" if run else "done",
            why,
            self._sql(info, st),
            self._lock(info),
        )
        if not run:
            self.say(f"{counter} {info.name}: skipped, {why}")
            return result
        self.say(f"{counter} {info.name}: {why}; lock: {info.lock}")
        started = time.monotonic()
        runner = getattr(self, "_run_" + info.name.replace("-", "_"))
        attempts = runner(conn, st, result)
        result.seconds = time.monotonic() - started
        result.attempts = attempts
        tries = f" after {attempts} attempts" if attempts and attempts > 1 else ""
        self.say(f"    done in {result.seconds:.2f} s{tries}")
        return result

    def _limits(self, conn: psycopg.Connection[Any], statement_ms: int, lock_ms: int) -> None:
        conn.execute(
            sql.load("migrate/session_limits"),
            {"statement_timeout": f"{statement_ms}ms", "lock_timeout": f"{lock_ms}ms"},
        )

    def _default_limits(self, conn: psycopg.Connection[Any]) -> None:
        t = self.target.timeouts
        self._limits(conn, t.statement_ms, t.lock_ms)

    def _run_check_duplicates(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(sql.load("migrate/duplicates")).fetchall()
        if rows:
            total = rows[0]["duplicated_pairs"]
            shown = "; ".join(f"run {r['run_id']} id {r['id']} x{r['copies']}" for r in rows[:5])
            raise RefusedError(
                f"{total} (run_id, id) pairs occur more than once, e.g. {shown}",
                hint="keep one row of each pair, then rerun; the unique key cannot be built",
            )
        return 1

    def _run_drop_invalid_index(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        self._concurrent(conn, "migrate/drop_key_index", no_statement_timeout=False)
        return 1

    def _run_build_index(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        label = "building workflow_events_run_id_id_idx"
        try:
            with BuildProgress(self.target, self.reporter, st.pid, label):
                self._concurrent(conn, "migrate/build_key_index", no_statement_timeout=True)
        except pgerrors.UniqueViolation as exc:
            raise RefusedError(
                f"the unique index cannot be built: {' '.join(str(exc).split())}; the failed "
                "build left an INVALID index",
                hint="remove the duplicate (run_id, id) rows; a rerun drops and rebuilds the index",
            ) from None
        except psycopg.Error as exc:
            err = query_error(exc, self.target, "building workflow_events_run_id_id_idx")
            if _invalid_key_index(conn):  # said only when the failed build left one
                err.hint = (
                    "the interrupted build left an INVALID index; rerun `wfctl migrate --online`,"
                    " it drops and rebuilds it"
                )
            raise err from None
        return 1

    def _concurrent(
        self, conn: psycopg.Connection[Any], name: str, *, no_statement_timeout: bool
    ) -> None:
        """A CONCURRENTLY statement: its lock never blocks DML, so no lock_timeout."""
        statement_ms = 0 if no_statement_timeout else self.target.timeouts.statement_ms
        self._limits(conn, statement_ms, 0)
        try:
            conn.execute(sql.load(name))
        finally:
            self._default_limits(conn)

    def _run_verify_index(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        if st.key_index_ok:
            result.reason = "valid, ready, UNIQUE (run_id, id)"
            return 1
        raise WfctlError(
            f"workflow_events_run_id_id_idx is {st.key_index or 'absent'} after the build",
            hint="rerun `wfctl migrate --online`; it drops an INVALID index and rebuilds it",
        )

    def _run_hook_column(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        return self._with_lock_retries(
            conn, HOOKS, lambda: self._exec(conn, "migrate/add_hook_token_retention")
        )

    def _run_swap_key(self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult) -> int:
        if not st.key_index_ok:
            raise WfctlError(
                "the prebuilt index is not valid; the key cannot be swapped",
                hint="rerun `wfctl migrate --online --swap`; it rebuilds the index first",
            )
        name = "migrate/add_key" if st.no_key else "migrate/swap_key"
        return self._with_lock_retries(conn, EVENTS, lambda: self._exec(conn, name))

    def _run_drop_run_id_index(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        if not st.swapped:
            raise WfctlError(
                "the key was not swapped; the (run_id) index is still needed",
                hint="rerun `wfctl migrate --online --swap`",
            )
        self._concurrent(conn, "migrate/drop_run_id_index", no_statement_timeout=False)
        return 1

    def _run_create_event_slots(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        return self._with_lock_retries(
            conn, EVENTS, lambda: self._exec(conn, "migrate/create_event_slots")
        )

    def _run_record_migrations(
        self, conn: psycopg.Connection[Any], st: KeyState, result: StepResult
    ) -> int:
        assert self.plan is not None
        plan = self.plan
        recorded: list[Replaced] = []

        def record() -> None:
            recorded.clear()
            with conn.transaction():
                conn.execute(sql.load("migrate/lock_migrations_table"))
                fresh = state_mod.read(conn)  # inside the lock: no other migrator records now
                for r in plan.to_record(fresh):
                    conn.execute(
                        sql.load("migrate/record_migration"),
                        {"hash": r.migration.sha256, "created_at": r.migration.when},
                    )
                    recorded.append(r)

        attempts = self._with_lock_retries(conn, MIGRATIONS, record)
        result.rows = [_record_row(r) for r in recorded]
        return attempts

    def _exec(self, conn: psycopg.Connection[Any], name: str) -> None:
        conn.execute(sql.load(name))

    def _with_lock_retries(
        self, conn: psycopg.Connection[Any], relation: str, action: Callable[[], None]
    ) -> int:
        """Run `action` under the short lock_timeout; on a lock timeout retry with backoff."""
        return self.locks.run(conn, relation, action)

    # ----------------------------------------------------------------- outcome
    def _finish(
        self, report: Report, st: KeyState, conn: psycopg.Connection[Any], *, final: bool
    ) -> None:
        if final:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
                drift = [d.text for d in catalog.compare(conn, "slot")] if self.options.swap else []
            report.era_after = world.era
            if self.options.swap:
                report.catalog_drift = drift
        if self.plan is not None:
            report.remaining = [r.as_dict() for r in self.plan.remaining]
            report.advice = _swap_advice(self.plan, report.dry_run)
        else:
            report.advice = _prepare_advice(st, self.advice_plan)

    def say(self, text: str) -> None:
        self.reporter.say(text)


def _record_row(r: Replaced) -> dict[str, Any]:
    return {"tag": r.tag, "hash": r.migration.sha256, "created_at": r.migration.when}


def _advice_plan(package: Package, st: KeyState) -> SwapPlan | None:
    """For prepare-only advice: the pending migrations, without refusing anything."""
    pending = analyse_pending(package, st)
    return SwapPlan(package, pending, [], pending)


def _prepare_advice(st: KeyState, plan: SwapPlan | None) -> str:
    if st.swapped:
        return "nothing to prepare: workflow_events is already keyed (run_id, id)"
    if plan is None:
        return RUN_THE_MIGRATOR
    key = plan.key_migration
    if key is None:
        return (
            f"{plan.package.label} has no pending migration that swaps the key; "
            "install the slot-era package, then " + RUN_THE_MIGRATOR
        )
    if key.analysis.adopts_prebuilt_index:
        return f"{RUN_THE_MIGRATOR} ({key.tag} adopts workflow_events_run_id_id_idx)"
    return (
        f"do not run the package's migrator as is: its {key.tag} does not adopt the prebuilt "
        "index and would build its own under ACCESS EXCLUSIVE; run "
        f"`wfctl migrate --online --swap --package {plan.package.root}` instead"
        if key.analysis.recognised
        else f"{key.tag} is not a form wfctl recognises; review it before running the migrator"
    )


def _swap_advice(plan: SwapPlan, dry_run: bool) -> str:
    if not plan.remaining:
        return (
            "nothing remains: the package's migrator will find nothing to apply"
            if not dry_run
            else "afterwards nothing remains for the package's migrator"
        )
    tags = ", ".join(r.tag for r in plan.remaining)
    return (
        f"run the package's migrator for what remains ({tags}); wfctl does not apply "
        "migrations it does not replace"
    )


def _invalid_key_index(conn: psycopg.Connection[Any]) -> bool:
    """Whether an INVALID workflow_events_run_id_id_idx exists (after a failed build)."""
    try:
        row = conn.execute(sql.load("migrate/key_index_invalid")).fetchone()
    except psycopg.Error:
        return True  # cannot tell: the rerun advice is harmless
    return bool(row and row[0])
