"""Corpus worlds: made by the REAL runtime, torn by fault injection, as operators have them.

Why: doctor and repair are only proven on state the real package leaves behind. Every run in
these worlds is started by the real runtime (`workflow`/`@workflow/core` 5.0.0-beta.39 on
`@workflow/world-postgres` 5.0.0-beta.29, tests/judge.py); every corruption is a real write
path torn the way beta29 tears it (a trigger makes one statement fail or sleep; for a crash,
the runtime is SIGKILLed while the statement sleeps and the sleeping backend is terminated).

Two worlds, built once per session:
- `healthy`: background runs in every state (completed, failed, cancelled, running on a step
  waiting for its retry, a long sleeper of days with two live continuation jobs keyed
  `wait_<id>:hop-N` from two settings of WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS,
  waiting on a hook, sleeping after setting and deleting attributes, pending after one
  failed delivery). Nothing in it is corrupt.
- `faulted`: the same background (cloned before its pending run), then every family the real
  runtime produces, each in its own run: orphan step / wait / hook rows, a step and a wait
  completed without their events, a run completed without `run_completed`, a run row without
  `run_created`, a lost wake-up (job deleted mid-sleep), an exhausted job (flow route down),
  `hook_received` before `hook_created` (a hook resumed inside the window), one hook token
  owned by two live runs (two creations racing), run attributes ahead of the log (an
  attr_set insert failing until the run is cancelled); the crash leaves its runs' jobs
  locked by the SIGKILLed runtime's workers.

Each run carries what the tests judge it by (`Run`): the doctor codes expected for it (empty:
healthy), the state its workflow ends in once repaired and driven by the runtime, and the
hook resume the workflow still needs to get there.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests import realworld as rw
from tests.conftest import Server, _create_db
from tests.corpus.snapshot import JOB_RUN_ID
from tests.dumprestore import round_trip
from tests.faults import drop_faults, fail_insert, slow_insert, terminate
from tests.judge import Runtime, wait_until

log = logging.getLogger("wfctl.corpus")  # build timings: -o log_cli=true --log-cli-level=INFO
TERMINAL = frozenset({"completed", "failed", "cancelled"})
# Liveness bounds for the builders' polls (not speed assertions): 2 cores shared by many.
SETTLE = 60.0


@dataclass(frozen=True)
class Run:
    """One run of a corpus world and what the tests expect of it."""

    label: str
    run_id: str
    family: str = ""  # the corruption it holds; "" = healthy
    codes: frozenset[str] = frozenset()  # doctor codes expected (empty: none exists yet)
    end: str | None = None  # the status its workflow ends in (None: it stays live)
    value: Any = None  # its return value when `end == "completed"`
    resume: tuple[str, Any] | None = None  # (token, payload) the runtime still needs
    note: str = ""
    repairable: bool = True  # False: report-only (the runtime already accepted its log)

    @property
    def corrupt(self) -> bool:
        return bool(self.family)


@dataclass
class World:
    """A built world: its (restored) template database, its runs by label, and the workers
    that held job locks when their runtime was SIGKILLed (the operator knows they are dead)."""

    name: str
    template: str
    runs: dict[str, Run] = field(default_factory=dict)
    dead_workers: list[str] = field(default_factory=list)
    source: str = ""  # the database the runtime built, before the dump/restore

    @property
    def release(self) -> str:
        """The release whose runtime made it: `beta29`, `4.3.7`, `4.1.1` (the name's prefix)."""
        return self.name.split("/")[0] if "/" in self.name else "beta29"

    @property
    def kind(self) -> str:
        """`healthy` or `faulted`."""
        return self.name.rsplit("/", 1)[-1]

    def corrupt(self) -> dict[str, Run]:
        return {r.run_id: r for r in self.runs.values() if r.corrupt}

    def healthy(self) -> dict[str, Run]:
        return {r.run_id: r for r in self.runs.values() if not r.corrupt}


class Builder:
    """Starts runtimes on one database and records the runs it makes."""

    def __init__(self, dsn: str, folder: Path, log_dir: Path) -> None:
        self.dsn = dsn
        self.folder = folder
        self.log_dir = log_dir
        self.runs: dict[str, Run] = {}
        self.runtimes: list[Runtime] = []

    def runtime(self, name: str, **env: str) -> Runtime:
        rt = Runtime(self.dsn, self.log_dir, env, name=name, folder=self.folder)
        self.runtimes.append(rt)
        return rt.start(timeout=SETTLE * 2)

    def add(self, run: Run) -> Run:
        self.runs[run.label] = run
        return run

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True)

    def scalar(self, query: str, params: Any = None) -> Any:
        with self.connect() as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0]

    def status(self, run_id: str) -> str | None:
        return self.scalar(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        )

    def settle(self, run_id: str, statuses: set[str] | frozenset[str]) -> None:
        wait_until(lambda: self.status(run_id) in statuses, SETTLE, f"{run_id} in {statuses}")

    def has_event(self, run_id: str, event_type: str) -> bool:
        return bool(
            self.scalar(
                "SELECT count(*) FROM workflow.workflow_events WHERE run_id = %s AND type = %s",
                (run_id, event_type),
            )
        )

    def close(self) -> None:
        for rt in self.runtimes:
            rt.stop()


# --- the healthy background ----------------------------------------------------------------------


def pair_value(x: int) -> dict[str, int]:
    return {"a": x + 1, "b": x + 11}


def start_background(
    b: Builder, rt: Runtime, *, pair_module: str, module: str, sleeper: str
) -> dict[str, str]:
    """Start, on `rt`, the healthy runs every release's corpus holds (all states but pending,
    see `add_pending`); `sleeper` says what the long sleeper's jobs are on this release.
    {label: run id} of the ones `settle_background` drives on."""
    b.add(Run("completed", rt.start_run("pair", [1], module=pair_module), end="completed",
              value=pair_value(1)))  # fmt: skip
    started = {"completed_hook": rt.start_run("hooked", [2, "corpus-done"], module=module)}
    b.add(Run("completed_hook", started["completed_hook"], end="completed", value={"total": 7}))
    b.add(Run("failed", rt.start_run("doomed", [3], module=module), end="failed"))
    started["cancelled"] = rt.start_run("hooked", [4, "corpus-cancel"], module=module)
    b.add(Run("cancelled", started["cancelled"], end="cancelled"))
    started["hook_waiting"] = rt.start_run("hooked", [5, "corpus-wait"], module=module)
    b.add(Run("hook_waiting", started["hook_waiting"], note="waits for a resume, no job"))
    started["step_retrying"] = rt.start_run("patient", [6], module=module)
    b.add(Run("step_retrying", started["step_retrying"],
              note="running on a step whose retry is due in 2 h"))  # fmt: skip
    started["long_sleep"] = rt.start_run("longSleep", [7, 3], module=module)
    b.add(Run("long_sleep", started["long_sleep"], note=sleeper))
    return started


def settle_background(
    b: Builder, rt: Runtime, started: dict[str, str], more: Sequence[tuple[str, str]] = ()
) -> None:
    """Resume one hook, cancel one run, wait for every ended run's terminal event and for each
    live run's last event (`more`: other (run id, event type) pairs), then for a quiet queue."""
    wait_until(lambda: b.has_event(started["completed_hook"], "hook_created"), SETTLE,
               "hook_created")  # fmt: skip
    rt.resume_hook("corpus-done", {"n": 5})
    wait_until(lambda: b.has_event(started["cancelled"], "hook_created"), SETTLE, "hook_created")
    rt.cancel(started["cancelled"])
    for run in b.runs.values():
        if run.end is not None:
            b.settle(run.run_id, TERMINAL)
    waits = [
        (started["hook_waiting"], "hook_created"),
        (started["step_retrying"], "step_retrying"),
        (started["long_sleep"], "wait_created"),
        *more,
    ]
    for run_id, event in waits:
        wait_until(lambda r=run_id, e=event: b.has_event(r, e), SETTLE, event)
    quiesce(b)


def build_background(b: Builder) -> None:
    """The shared background, plus a run with attributes, and a restart that gives the long
    sleeper hop jobs of two settings; the runtimes are stopped after."""
    rt = b.runtime("background", WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS="3600")
    started = start_background(b, rt, pair_module="judge", module="corpus",
                               sleeper="3-day sleep, hop jobs of two settings")  # fmt: skip
    long_sleep = started["long_sleep"]
    tagged = rt.start_run("tagged", [9], module="rules")
    b.add(Run("attributes", tagged, note="set and deleted attributes, then a 1-hour sleep"))
    settle_background(b, rt, started, [(tagged, "wait_created")])
    rt.stop()
    # A restart with another continuation limit: its startup recovery replays the sleeper,
    # which enqueues a continuation keyed by the new hop count beside the first one.
    rt = b.runtime("background-restart", WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS="7200")
    wait_until(lambda: continuation_keys(b, long_sleep) >= 2, SETTLE, "a second continuation job")
    # The recovery re-drives every live run (the retrying step's job is delivered at once
    # and rescheduled): stop only once nothing is due, so no delivery is cut short.
    quiesce(b)
    rt.stop()


def quiesce(b: Builder) -> None:
    """Wait until no job is locked or due within a minute (exhausted ones aside)."""
    wait_until(
        lambda: (
            not b.scalar(
                "SELECT count(*) FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL"
                " OR (attempts < max_attempts AND run_at < now() + interval '1 minute')"
            )
        ),
        SETTLE,
        "the queue to have nothing due",
        interval=0.3,
    )


def continuation_keys(b: Builder, run_id: str) -> int:
    """Live jobs keyed `wait_<id>:hop-N` for a run."""
    return int(
        b.scalar(
            "SELECT count(*) FROM graphile_worker._private_jobs j"
            f" WHERE j.key LIKE 'wait\\_%%:hop-%%' AND {JOB_RUN_ID} = %s",
            (run_id,),
        )
    )


def add_pending(b: Builder) -> None:
    """A run whose first delivery failed (the flow route was down for a moment): `pending`,
    its job retried in a few seconds. Made last: any later runtime would run it."""
    rt = b.runtime("pending", JUDGE_FLOW_DOWN="1", JUDGE_REENQUEUE="0")
    run_id = rt.start_run("pair", [8])
    wait_until(lambda: rt.deliveries(run_id)[1] >= 1, SETTLE, "one failed delivery")
    rt.stop()
    b.add(Run("pending", run_id, end="completed", value=pair_value(8), note="1 failed attempt"))


# --- the faults ---------------------------------------------------------------------------------


def add_exhausted(b: Builder) -> None:
    """The flow route is down while a run's job uses its 3 attempts: the run stays pending
    with an exhausted job and nothing to wake it (made first: a down route fails every due job)."""
    rt = b.runtime("flow-down", JUDGE_FLOW_DOWN="1", JUDGE_REENQUEUE="0")
    run_id = rt.start_run("pair", [10])
    with b.connect() as conn:
        wait_until(
            lambda: conn.execute(
                "SELECT count(*) FILTER (WHERE attempts >= max_attempts AND locked_at IS NULL)"
                f" FROM graphile_worker._private_jobs j WHERE {JOB_RUN_ID} = %s",
                (run_id,),
            ).fetchone()[0],
            SETTLE * 2,
            "the job to use its 3 attempts",
        )
    rt.stop()
    b.add(
        Run(
            "exhausted_job",
            run_id,
            "lost wake-up: its only job used its 3 attempts",
            codes=frozenset({"WF133", "WF134"}),
            end="completed",
            value=pair_value(10),
        )
    )


def add_hook_races(b: Builder) -> None:
    """Two races of the hook paths, on one runtime (`_hook_received_first`, `_shared_token`)."""
    rt = b.runtime("hook-races", JUDGE_REENQUEUE="0")
    _hook_received_first(b, rt)
    _shared_token(b, rt)
    rt.stop()


def _hook_received_first(b: Builder, rt: Runtime) -> None:
    """`hook_created`'s event insert fails after the hook row landed (every time, until the
    hook is resumed: the window stays open however fast the runtime retries); the hook is
    resumed inside that window (the row makes the token resolvable), and the next replay
    writes `hook_created` with a newer id: a completed run whose `hook_received` sorts first."""
    run_id = rw.new_run_id()
    with b.connect() as conn:
        fault = fail_insert(conn, "workflow_events", run_id, "hook_created", times=None)
        rt.start_run("hooked", [11, "corpus-early"], run_id, module="corpus")
        wait_until(lambda: fault.matches() >= 1, SETTLE, "the failed hook_created insert")
        rt.resume_hook("corpus-early", {"n": 1})
        fault.drop()
    b.settle(run_id, TERMINAL)
    order = b.scalar(
        "SELECT string_agg(type, ',' ORDER BY id) FROM workflow.workflow_events"
        " WHERE run_id = %s AND type IN ('hook_created', 'hook_received')",
        (run_id,),
    )
    assert order == "hook_received,hook_created", f"the window was missed: {order}"
    b.add(
        Run(
            "hook_received_first",
            run_id,
            "hook_received sorts before hook_created",
            end="completed",
            value={"total": 12},
            repairable=False,
        )
    )


def _shared_token(b: Builder, rt: Runtime) -> None:
    """Two runs create a hook with the same token at once: the token check and the hook row
    insert are separate statements and `token` has no unique index, so while the first
    run's insert is delayed the second passes the check too: two live runs own one token
    (upstream vw#4173). Which run a resume reaches is undefined, so both stay waiting."""
    first = rw.new_run_id()
    with b.connect() as conn:
        fault = slow_insert(conn, "workflow_hooks", first, None, seconds=3)
        rt.start_run("hooked", [12, "corpus-shared"], first, module="corpus")
        wait_until(lambda: fault.matches() >= 1, SETTLE, "the first hook insert to sleep")
        second = rt.start_run("hooked", [13, "corpus-shared"], module="corpus")
        for run_id in (first, second):
            wait_until(lambda r=run_id: b.has_event(r, "hook_created"), SETTLE, "hook_created")
        fault.drop()
    owners = b.scalar(
        "SELECT count(DISTINCT run_id) FROM workflow.workflow_hooks WHERE token = %s",
        ("corpus-shared",),
    )
    assert owners == 2, f"the race was missed: {owners} owner(s)"
    for label, run_id in (("shared_token_first", first), ("shared_token_second", second)):
        b.add(Run(label, run_id, "hook token owned by two live runs", repairable=False))


def add_torn_attributes(b: Builder) -> None:
    """A workflow's second setAttributes() loses its attr_set event: the package UPDATEs the
    run's attributes, then the event insert fails (every time: a trigger), so each retried
    delivery moves the row again and journals nothing; the operator cancels the run, and no
    redelivery can heal it any more (attr_set is refused on a terminal run)."""
    rt = b.runtime("torn-attributes", JUDGE_REENQUEUE="0")
    run_id = rw.new_run_id()
    with b.connect() as conn:
        fault = fail_insert(conn, "workflow_events", run_id, "attr_set", times=None, skip=1)
        rt.start_run("tagged", [14], run_id, module="rules")
        wait_until(lambda: fault.matches() >= 2, SETTLE, "the second attr_set refused")
        rt.cancel(run_id)
        b.settle(run_id, TERMINAL)
        fault.drop()
    quiesce(b)
    rt.stop()
    b.add(
        Run(
            "attributes_torn",
            run_id,
            "run attributes ahead of the log (attr_set lost, run cancelled)",
            frozenset({"WF149"}),
            end="cancelled",
        )
    )


@dataclass(frozen=True)
class Crash:
    """One run torn by the crash: where its write sleeps, and what it is expected to show."""

    label: str
    family: str
    workflow: str
    args: list[Any]
    event_type: str
    codes: frozenset[str]
    value: Any
    module: str = "judge"
    resume: tuple[str, Any] | None = None


def _crash(
    label: str,
    family: str,
    workflow: str,
    args: list[Any],
    event_type: str,
    code: str,
    value: Any,
    module: str = "judge",
    resume: tuple[str, Any] | None = None,
) -> Crash:
    return Crash(label, family, workflow, args, event_type, frozenset({code}), value, module,
                 resume)  # fmt: skip


# The run-created crash: the run row lands, its event sleeps; the queue message the start
# sends anyway runs it to completion, so the log starts at run_started (a completed run).
CRASHES = (
    _crash("orphan_step", "step row without step_created", "fanout", [20], "step_created",
           "WF101", {"parts": [21, 22, 23, 24], "total": 90}),
    _crash("orphan_wait", "wait row without wait_created", "nap", [21, 1], "wait_created",
           "WF102", pair_value(21), "corpus"),
    _crash("orphan_hook", "hook row without hook_created", "hooked", [22, "corpus-orphan"],
           "hook_created", "WF103", {"total": 25}, "corpus", ("corpus-orphan", {"n": 3})),
    _crash("step_completed_lost", "step completed without step_completed", "pair", [23],
           "step_completed", "WF111", pair_value(23)),
    _crash("wait_completed_lost", "wait completed without wait_completed", "nap", [24, 1],
           "wait_completed", "WF112", pair_value(24), "corpus"),
    _crash("run_completed_lost", "run completed without run_completed", "pair", [25],
           "run_completed", "WF113", pair_value(25)),
    _crash("run_created_lost", "run without run_created", "pair", [26], "run_created",
           "WF121", pair_value(26)),
)  # fmt: skip


def _sleepers(conn: psycopg.Connection[Any]) -> list[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
    ).fetchall()
    return [int(r[0]) for r in rows]


def add_crashes(b: Builder) -> None:
    """Every crash at once: each run's write sleeps in its own backend; then the runtime is
    SIGKILLed and the sleeping backends terminated, so each entity write before the sleeping
    event insert stays committed and the event never lands. A sleeper (`nap`, 8 s) loses
    its wake-up: its job is deleted once the runtime is dead."""
    rt = b.runtime("crash", JUDGE_REENQUEUE="0", WORKFLOW_POSTGRES_MAX_POOL_SIZE="40")
    starts: list[threading.Thread] = []
    with b.connect() as conn:
        # Every trigger first: CREATE TRIGGER waits for the sleeping inserts' table lock.
        planned = []
        for crash in CRASHES:
            run_id = rw.new_run_id()
            slow_insert(conn, "workflow_events", run_id, crash.event_type, seconds=600)
            planned.append((crash, run_id))
        for crash, run_id in planned:
            b.add(
                Run(
                    crash.label,
                    run_id,
                    crash.family,
                    crash.codes,
                    "completed",
                    crash.value,
                    crash.resume,
                )
            )
            start = _starter(rt, crash.workflow, crash.args, run_id, crash.module)
            if crash.event_type == "run_created":  # start() itself blocks in the window
                starts.append(threading.Thread(target=start, daemon=True))
                starts[-1].start()
            else:
                start()
        wait_until(lambda: len(_sleepers(conn)) >= len(CRASHES), SETTLE * 2, "every window")
        # Started last, so its 8 s sleep is still running at the kill; by the time doctor
        # sees the world its wait is past `resume_at` with no job (upstream vw#3743).
        lost = rt.start_run("nap", [27, 8], module="corpus")
        b.add(
            Run(
                "lost_wake_up",
                lost,
                "lost wake-up: its job deleted mid-sleep, the wait past resume_at",
                frozenset({"WF133"}),
                "completed",
                pair_value(27),
            )
        )
        wait_until(lambda: b.has_event(lost, "wait_created"), SETTLE, "the sleeper's wait")
        rt.kill()
        pids = _sleepers(conn)
        for pid in pids:
            terminate(conn, pid)
        wait_until(lambda: not _sleepers(conn), SETTLE, "the terminated backends to exit")
        drop_faults(conn)
        conn.execute(
            f"DELETE FROM graphile_worker._private_jobs j WHERE {JOB_RUN_ID} = %s",
            (lost,),
        )
    for thread in starts:
        thread.join(timeout=SETTLE)


def _starter(
    rt: Runtime, workflow: str, args: list[Any], run_id: str, module: str
) -> Callable[[], None]:
    def start() -> None:
        with contextlib.suppress(OSError):  # the crash cuts a blocked start() short
            rt.start_run(workflow, args, run_id, module=module)

    return start


def dead_workers(dsn: str) -> list[str]:
    """Workers holding job locks (every runtime of the corpus is stopped or killed by now)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT locked_by FROM graphile_worker._private_jobs"
            " WHERE locked_by IS NOT NULL ORDER BY 1"
        ).fetchall()
    return [str(r[0]) for r in rows]


# --- the corpus ---------------------------------------------------------------------------------

WORLD_STEPS: dict[str, tuple[Callable[[Builder], None], ...]] = {
    "healthy": (add_pending,),
    "faulted": (add_exhausted, add_hook_races, add_torn_attributes, add_crashes, add_pending),
}


def wait_idle(server: Server, dbname: str, timeout: float = 30.0) -> None:
    """CREATE DATABASE ... TEMPLATE needs the source without sessions: wait for the backends
    of stopped or killed runtimes to exit."""
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        wait_until(
            lambda: (
                not conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (dbname,)
                ).fetchone()[0]
            ),
            timeout,
            f"no sessions on {dbname}",
        )


def build_corpus(
    server: Server, real_template: str, folder: Path, log_dir: Path
) -> dict[str, World]:
    """The beta.29 corpus (build_worlds with this module's background and world steps)."""
    return build_worlds(
        server, real_template, folder, log_dir,
        release="beta29", tag="", background=build_background, world_steps=WORLD_STEPS,
    )  # fmt: skip


def build_worlds(
    server: Server,
    template: str,
    folder: Path,
    log_dir: Path,
    *,
    release: str,
    tag: str,
    background: Callable[[Builder], None],
    world_steps: Mapping[str, Sequence[Callable[[Builder], None]]],
) -> dict[str, World]:
    """Build the background once, clone it per world, add each world's own steps, and end
    each world as a template database restored from a pg_dump of what the runtime left
    (`World.template`; `World.source` keeps the database as the runtime left it). Worlds are
    keyed `<release>/<name>`; their databases are named `corpus<tag>_...`."""
    t0 = time.monotonic()
    bg = _create_db(server, template, prefix=f"corpus{tag}_bg")
    builder = Builder(bg.dsn, folder, log_dir)
    try:
        background(builder)
    finally:
        builder.close()
    wait_idle(server, bg.name)
    log.info("%s background built in %.1fs", release, time.monotonic() - t0)
    worlds: dict[str, World] = {}
    for name, steps in world_steps.items():
        t0 = time.monotonic()
        db = _create_db(server, bg.name, prefix=f"corpus{tag}_{name}")
        world = Builder(db.dsn, folder, log_dir)
        world.runs = dict(builder.runs)
        try:
            for step in steps:
                step(world)
        finally:
            world.close()
        wait_idle(server, db.name)
        t1 = time.monotonic()
        restored = _create_db(server, "template0", prefix=f"corpus{tag}_{name}_restored")
        round_trip(db.dsn, restored.dsn)
        log.info("%s %s: built in %.1fs, dump/restore %.1fs", release, name, t1 - t0,
                 time.monotonic() - t1)  # fmt: skip
        key = f"{release}/{name}"
        worlds[key] = World(key, restored.name, world.runs, dead_workers(restored.dsn), db.name)
    return worlds
