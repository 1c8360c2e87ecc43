"""Corpus worlds of every published two-task release, each made by its OWN runtime, torn by crashes.

Why: most self-hosted worlds run the 4.x line (npm `latest` of `@workflow/world-postgres` is
4.3.7; the seed's operator runs 4.1.1), and what a crash can leave differs release by release:
4.1.x and 4.2.0 write every entity row and its event as two autocommits, 4.3.0 and
5.0.0-beta.27 wrap only `step_started` in a transaction, 4.3.6 four writes, 4.3.7 six; all of
them run steps as a second graphile task (`workflow_steps`) and re-enqueue every active run at
each `world.start()`. So each release gets its own worlds, made by the runtime its users got
(tests/node4x/<version>, tests/judge.py `KITS`, tests/node/v4/server.mjs) on a database its
own setup bin made, crashed with the same trigger + SIGKILL mechanics as the beta.29 corpus
(tests/corpus/worlds.py), and moved with `pg_dump | psql`. A release is data (`RELEASES`: its
version, the crashes its write paths allow, what its runtime does next with each); the
builder below is shared.

Per release, two worlds built once per session:
- `healthy`: background runs in every state (completed, completed after a hook resume, failed,
  cancelled, waiting on a hook, running on a step whose retry is due in 2 h, a 3-day sleeper
  with its one delayed wake-up job, pending after one failed delivery). Nothing is corrupt.
- `faulted`: the same background (cloned before its pending run), then every crash the
  release's write paths allow (`RELEASES[version].crashes`), each in its own run, a sleeper
  whose wake-up job was deleted mid-sleep, and a sleeper that one restart's re-enqueue gave a
  second delayed wake-up job (the startup recovery limited to that run, so no background run
  is re-driven). The crash leaves its runs' jobs locked by the SIGKILLed runtime's workers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import realworld as rw
from tests.conftest import Server
from tests.corpus.snapshot import JOB_RUN_ID
from tests.corpus.worlds import (
    SETTLE,
    Builder,
    Run,
    World,
    _sleepers,
    _starter,
    build_worlds,
    pair_value,
    quiesce,
    settle_background,
    start_background,
)
from tests.faults import drop_faults, slow_insert, terminate
from tests.judge import KITS, build_runtime, wait_until

MODULE = "corpus"  # tests/node/v4/workflows/corpus.ts


def build_background(b: Builder) -> None:
    """The shared background; one runtime start only, so the long sleeper holds exactly one
    delayed wake-up job."""
    rt = b.runtime("background")
    started = start_background(b, rt, pair_module=MODULE, module=MODULE,
                               sleeper="3-day sleep, one delayed wake-up job")  # fmt: skip
    settle_background(b, rt, started)
    rt.stop()


def add_pending(b: Builder) -> None:
    """A run whose first delivery failed (the flow route answered 503): `pending`, its job
    retried in a few seconds. Made last: any later runtime would run it."""
    rt = b.runtime("pending", JUDGE_FLOW_DOWN="1", JUDGE_REENQUEUE="0")
    run_id = rt.start_run("pair", [8], module=MODULE)
    wait_until(lambda: rt.deliveries(run_id)[1] >= 1, SETTLE, "one failed delivery")
    rt.stop()
    b.add(Run("pending", run_id, end="completed", value=pair_value(8), note="1 failed attempt"))


@dataclass(frozen=True)
class Crash:
    """One run torn by the crash: where its write sleeps, and what it is expected to show."""

    label: str
    family: str
    workflow: str
    args: list[Any]
    event_type: str
    code: str
    end: str
    value: Any = None
    resume: tuple[str, Any] | None = None


# Every crash a two-task release's write paths can have: the entity write and its event as
# two statements. A release lists those its dist/storage.js does NOT wrap in a transaction.
_CRASHES = (
    Crash("step_completed_lost", "step completed without step_completed", "pair", [23],
          "step_completed", "WF111", "completed", pair_value(23)),
    Crash("step_failed_lost", "step failed without step_failed", "doomed", [28],
          "step_failed", "WF111", "failed"),
    Crash("wait_completed_lost", "wait completed without wait_completed", "nap", [24, 1],
          "wait_completed", "WF112", "completed", pair_value(24)),
    Crash("orphan_wait", "wait row without wait_created", "nap", [21, 1], "wait_created",
          "WF102", "completed", pair_value(21)),
    Crash("orphan_hook", "hook row without hook_created", "hooked", [22, "corpus-orphan"],
          "hook_created", "WF103", "completed", {"total": 25}, ("corpus-orphan", {"n": 3})),
    Crash("orphan_step", "step row without step_created", "pair", [20], "step_created",
          "WF101", "completed", pair_value(20)),
    Crash("run_created_lost", "run row without run_created", "pair", [26], "run_created",
          "WF121", "completed", pair_value(26)),
)  # fmt: skip
CRASH = {c.label: c for c in _CRASHES}
# 5.0.0-beta.35's core creates an inline step with its step_started (one transaction); only the
# steps of a fan-out past its inline ones get an explicit step_created, as beta.29's corpus has.
_ORPHAN_FANOUT_STEP = Crash("orphan_step", "step row without step_created", "fanout", [20],
                            "step_created", "WF101", "completed",
                            {"parts": [21, 22, 23, 24], "total": 90})  # fmt: skip


@dataclass(frozen=True)
class Release:
    """One published release's corpus, as data: the version (its pinned set in
    tests/node4x/<version>), the crashes its write paths allow (`CRASH` labels), and what its
    runtime does next with each when nothing repairs it (`alone`, measured by the control in
    test_corpus.py): `wedges` (running, no delivery makes progress), `loops` (running,
    redelivered again and again, no new event), `heals` (the replay writes the missing event
    and the run reaches its end), `fails` (the run ends `failed`), `ended` (the runtime had
    already finished it before the crash was over). `piles`: a restart's re-enqueue gives a
    sleeper one more delayed wake-up job (4.x: `msg_<ULID>` keys; 5.0.0-beta.27 keys the wake-up
    `wait_<id>:hop-N`, so the restart's job replaces the first). `slow`: its worlds carry the
    `slowest` marker (CI still runs them)."""

    version: str
    alone: Mapping[str, str]
    slow: bool = False
    piles: bool = True
    variants: Mapping[str, Crash] = field(default_factory=dict)  # a crash made another way

    @property
    def crashes(self) -> tuple[Crash, ...]:
        return tuple(self.variants.get(label, CRASH[label]) for label in self.alone)

    @property
    def extra(self) -> tuple[str, ...]:
        """The faulted world's corrupt runs besides the crashes (see add_crashes)."""
        return ("lost_wake_up", "piled_sleeper") if self.piles else ("lost_wake_up",)


# Transactions in each release's dist/storage.js (which crash cannot happen there): none in
# 4.1.x and 4.2.0; step_started alone in 4.3.0 and 5.0.0-beta.27; 4.3.6 adds step_created,
# hook_disposed, hook_received; 4.3.7 also run_created (both paths).
_41 = {"step_completed_lost": "wedges", "step_failed_lost": "wedges",
       "wait_completed_lost": "loops", "orphan_wait": "loops", "orphan_hook": "fails",
       "orphan_step": "heals", "run_created_lost": "ended"}  # fmt: skip
_43 = {**_41, "orphan_hook": "heals"}
_437 = {k: v for k, v in _43.items() if k not in ("orphan_step", "run_created_lost")}
RELEASES: dict[str, Release] = {
    r.version: r
    for r in (
        Release("4.3.7", _437),
        Release("4.1.1", _41),
        Release("4.1.4", _41, slow=True),
        Release("4.1.5", _41, slow=True),
        Release("4.2.0", _41, slow=True),
        Release("4.3.0", _43, slow=True),
        Release("4.3.6", {k: v for k, v in _43.items() if k != "orphan_step"}, slow=True),
        Release(
            "5.0.0-beta.27",
            _43,
            slow=True,
            piles=False,
            variants={"orphan_step": _ORPHAN_FANOUT_STEP},
        ),
    )
}
ALONE = {v: dict(r.alone) for v, r in RELEASES.items()}


def flow_jobs(b: Builder, run_id: str) -> int:
    """Unlocked live `workflow_flows` jobs naming the run."""
    return int(
        b.scalar(
            "SELECT count(*) FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
            f" WHERE t.identifier = 'workflow_flows' AND {JOB_RUN_ID} = %s"
            " AND j.locked_at IS NULL AND j.attempts < j.max_attempts",
            (run_id,),
        )
    )


def add_piled_sleeper(b: Builder) -> str:
    """A 3-day sleeper, stopped; the restart whose startup recovery re-enqueues it (and only
    it) then makes its replay schedule one more delayed wake-up beside the first. Returns its
    run id; the caller starts the crash runtime as that restart."""
    rt = b.runtime("sleeper", JUDGE_REENQUEUE="0")
    piled = rt.start_run("longSleep", [30, 3], module=MODULE)
    wait_until(lambda: flow_jobs(b, piled) >= 1, SETTLE, "the sleeper's wake-up job")
    quiesce(b)
    rt.stop()
    b.add(
        Run(
            "piled_sleeper",
            piled,
            "a restart's re-enqueue left a second delayed wake-up job",
            frozenset({"WF132"}),
            note="3-day sleep",
        )
    )
    return piled


def add_crashes(b: Builder, release: str) -> None:
    """A sleeper given a second wake-up by a restart (where the release piles them), then every
    crash at once: each run's event insert sleeps in its own backend; the runtime is SIGKILLed
    and the sleeping backends terminated, so each entity write before the sleeping insert
    stays committed and its event never lands. A sleeper (`nap`, 8 s) loses its wake-up: its
    job is deleted once the runtime is dead."""
    crashes = RELEASES[release].crashes
    if RELEASES[release].piles:
        piled = add_piled_sleeper(b)
        rt = b.runtime("crash", JUDGE_REENQUEUE_ONLY=piled, WORKFLOW_POSTGRES_MAX_POOL_SIZE="40")
        wait_until(lambda: flow_jobs(b, piled) >= 2, SETTLE, "a second wake-up job")
    else:
        rt = b.runtime("crash", JUDGE_REENQUEUE="0", WORKFLOW_POSTGRES_MAX_POOL_SIZE="40")
    starts: list[threading.Thread] = []
    with b.connect() as conn:
        # Every trigger first: CREATE TRIGGER waits for the sleeping inserts' table lock.
        planned = []
        for crash in crashes:
            run_id = rw.new_run_id()
            slow_insert(conn, "workflow_events", run_id, crash.event_type, seconds=600)
            planned.append((crash, run_id))
        for crash, run_id in planned:
            b.add(
                Run(crash.label, run_id, crash.family, frozenset({crash.code}), crash.end,
                    crash.value, crash.resume)
            )  # fmt: skip
            start = _starter(rt, crash.workflow, crash.args, run_id, MODULE)
            if crash.event_type == "run_created":  # start() itself blocks in the window
                starts.append(threading.Thread(target=start, daemon=True))
                starts[-1].start()
            else:
                start()
        wait_until(lambda: len(_sleepers(conn)) >= len(crashes), SETTLE * 2, "every window")
        lost = rt.start_run("nap", [27, 8], module=MODULE)
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
        wait_until(lambda: flow_jobs(b, lost) >= 1, SETTLE, "the sleeper's wake-up job")
        rt.kill()
        for pid in _sleepers(conn):
            terminate(conn, pid)
        wait_until(lambda: not _sleepers(conn), SETTLE, "the terminated backends to exit")
        drop_faults(conn)
        conn.execute(
            f"DELETE FROM graphile_worker._private_jobs j WHERE {JOB_RUN_ID} = %s", (lost,)
        )
    for thread in starts:
        thread.join(timeout=SETTLE)


def db_tag(release: str) -> str:
    """The release as a database name part (`5.0.0-beta.27` -> `500beta27`)."""
    return "".join(ch for ch in release if ch.isalnum())


def build_corpus(server: Server, release: str, template: str, log_dir: Path) -> dict[str, World]:
    """The release's corpus: its background, a healthy and a faulted world (worlds.build_worlds)."""
    folder, _ = build_runtime(KITS[release])
    steps = {"healthy": (add_pending,), "faulted": (lambda w: add_crashes(w, release), add_pending)}
    return build_worlds(
        server, template, folder, log_dir,
        release=release, tag=db_tag(release), background=build_background,
        world_steps=steps,
    )  # fmt: skip
