"""Session fixtures of the corpus: each world is built once by the real runtime, moved through
pg_dump/psql, and put on trial once (doctor, dry run, repair twice, the runtime); the tests
then judge the recorded trial.

Why one trial per world: a trial is a sequence (a repair changes the world the runtime then
drives), each stage costs runtime or CLI starts, and CI's budget is minutes. The tests read
the stage they judge from `Trial`, so each assertion fails (or is expected to fail) alone.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests import judge
from tests.conftest import ROOT, Db, Server, _create_db
from tests.corpus import snapshot, worlds4
from tests.corpus.worlds import TERMINAL, World, build_corpus, wait_idle
from tests.realworld import read_back

log = logging.getLogger("wfctl.corpus")  # stage timings: -o log_cli=true --log-cli-level=INFO
# Liveness bound for the repaired runs to end under the runtime (not a speed assertion).
RUNTIME_BOUND = 180.0
FORCE = ("--min-age", "0s", "--force-min-age")
# The healthy worlds' waiting hook (`hooked(5, "corpus-wait")`), answered by `wfctl hooks
# resume` before the runtime starts: the run then ends `{"total": 10}`.
HOOK_RESUME = ("corpus-wait", '{"n": 5}')
HOOK_RESUME_VALUE = {"total": 10}
HOOK_RESUME_BOUND = 20.0


class Corpus:
    """Each release's worlds, built on first use and kept for the session (a test run that
    selects one release builds only that release's worlds). `build_ahead` builds the two-task
    releases' worlds one after another in a background thread, in the order the tests ask for
    them, so one release's worlds are built while the one before it is on trial."""

    def __init__(self, server: Server, request: pytest.FixtureRequest, base: Path) -> None:
        self.server = server
        self.request = request
        self.base = base
        self.worlds: dict[str, World] = {}
        self.built: set[str] = set()
        self.ahead: dict[str, Future[dict[str, World]]] = {}

    def build_ahead(self, releases: list[str]) -> None:
        pending = [r for r in releases if r in worlds4.RELEASES and r not in self.ahead]
        futures: dict[str, Future[dict[str, World]]] = {r: Future() for r in pending}
        self.ahead.update(futures)

        def run() -> None:
            for release, future in futures.items():
                try:
                    future.set_result(self._build4(release))
                except BaseException as exc:  # handed to the test that asks for it
                    future.set_exception(exc)

        threading.Thread(target=run, name="corpus-ahead", daemon=True).start()

    def _build4(self, release: str) -> dict[str, World]:
        log_dir = self.base / release
        log_dir.mkdir()
        template = real_template_4x(self.server, release)
        return worlds4.build_corpus(self.server, release, template, log_dir)

    def get(self, key: str) -> World:
        release = key.split("/")[0]
        if release not in self.built:
            self.built.add(release)
            if release in self.ahead:
                self.worlds.update(self.ahead[release].result())
            elif release == "beta29":
                log_dir = self.base / release
                log_dir.mkdir()
                template = self.request.getfixturevalue("real_template")
                folder, _ = judge.build_runtime()
                self.worlds.update(build_corpus(self.server, template, folder, log_dir))
            else:
                self.worlds.update(self._build4(release))
        return self.worlds[key]


def real_template_4x(server: Server, release: str) -> str:
    """A database made by the release's own setup bin (4.3.x, beta.27 `bootstrap`; 4.1.x, 4.2.0
    `workflow-postgres-setup`), from the same npm install its runtime runs from."""
    db = _create_db(server, prefix=f"tmpl_real_{worlds4.db_tag(release)}")
    judge.setup_world(judge.KITS[release], db.dsn)
    return db.name


def prefetch_jobs(ids: str) -> dict[str, Callable[[], object]]:
    """{release: install and `wf build` its runtime} for every release whose worlds the
    collected test ids name (started in the background by tests/conftest.py, so the sets
    download while the first release's worlds are built)."""
    return {
        release: functools.partial(judge.build_runtime, judge.KITS[release])
        for release in ("beta29", *worlds4.RELEASES)
        if f"[{release}/" in ids
    }


@pytest.fixture(scope="session")
def corpus_worlds(
    pg_server: Server, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Corpus:
    """The worlds of every release, each release built on first use (worlds.build_corpus,
    worlds4.build_corpus)."""
    if not judge.available():
        pytest.skip("node/npm not found: no real runtime")
    corpus = Corpus(pg_server, request, tmp_path_factory.mktemp("corpus"))
    ids = " ".join(item.nodeid for item in request.session.items)
    wanted = [r for r in worlds4.RELEASES if f"[{r}/" in ids]
    if len(wanted) > 1:
        corpus.build_ahead(wanted)
    return corpus


# --- the trial ---------------------------------------------------------------------------------


@dataclass
class Cli:
    """One `python -m wfctl --format json ...` (the operator's command line)."""

    status: int
    report: Any  # the parsed JSON, None when it printed none
    stderr: str


def wfctl(dsn: str, *args: str) -> Cli:
    env = {k: v for k, v in os.environ.items() if k not in ("WFCTL_DATABASE_URL", "DATABASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("WORKFLOW_POSTGRES_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "wfctl", "--dsn", dsn, "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    try:
        report = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        report = None
    return Cli(done.returncode, report, done.stderr)


def findings(report: Any) -> dict[str | None, set[str]]:
    """{run id (None: not about a run): {codes}} from a doctor JSON report."""
    out: dict[str | None, set[str]] = {}
    for check in (report or {}).get("checks", []):
        for sample in check.get("samples", []):
            out.setdefault(sample.get("run_id"), set()).add(check["code"])
    return out


@dataclass
class Trial:
    """Everything one world's trial recorded, stage by stage."""

    world: World
    db: Db
    statuses: dict[str, str | None] = field(default_factory=dict)
    job_locks: list[tuple[str, str]] = field(default_factory=list)  # (run id, worker)
    hop_keys: dict[str, list[str]] = field(default_factory=dict)  # run id -> job keys
    flow_jobs: dict[str, int] = field(default_factory=dict)  # run id -> live flow jobs
    tasks: set[str] = field(default_factory=set)  # the task identifiers of the queue's jobs
    info: Cli | None = None
    doctor: Cli | None = None
    before: dict[str, str] = field(default_factory=dict)
    runs_before: dict[str, Any] = field(default_factory=dict)
    dry: Cli | None = None
    after_dry: dict[str, str] = field(default_factory=dict)
    apply: Cli | None = None
    after_apply: dict[str, str] = field(default_factory=dict)
    runs_after_apply: dict[str, Any] = field(default_factory=dict)
    repair_events: set[str] = field(default_factory=set)  # event ids the apply wrote
    apply2: Cli | None = None
    after_apply2: dict[str, str] = field(default_factory=dict)
    doctor_after: Cli | None = None
    hook_resume: Cli | None = None  # `wfctl hooks resume` of the waiting hook (healthy worlds)
    terminal_before: dict[str, Any] = field(default_factory=dict)
    terminal_after: dict[str, Any] = field(default_factory=dict)
    final: dict[str, str | None] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    resumed: dict[str, str] = field(default_factory=dict)  # run id -> error, if any
    duplicates: dict[str, list[tuple[str, str | None, int]]] = field(default_factory=dict)
    read: dict[str, dict[str, Any]] = field(default_factory=dict)
    runtime_log: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    def unlock_args(self) -> list[str]:
        return [a for w in self.world.dead_workers for a in ("--unlock-dead-worker", w)]


def _state(trial: Trial) -> None:
    """What the restored world holds before anything runs on it."""
    ids = [r.run_id for r in trial.world.runs.values()]
    with psycopg.connect(trial.db.dsn, autocommit=True) as conn:
        for run_id, status in conn.execute(
            "SELECT id, status::text FROM workflow.workflow_runs WHERE id = ANY(%s)", (ids,)
        ).fetchall():
            trial.statuses[run_id] = status
        for run_id, key, locked_by, task, live in conn.execute(
            f"SELECT {snapshot.JOB_RUN_ID}, j.key, j.locked_by, t.identifier,"
            " j.locked_at IS NULL AND j.attempts < j.max_attempts"
            " FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id ORDER BY j.id"
        ).fetchall():
            trial.tasks.add(task)
            if locked_by is not None:
                trial.job_locks.append((run_id, locked_by))
            if key and ":hop-" in key:
                trial.hop_keys.setdefault(run_id, []).append(key)
            if live and task.endswith("flows"):
                trial.flow_jobs[run_id] = trial.flow_jobs.get(run_id, 0) + 1
        # The tasks the runtime ever queued on (a 5.0.0-beta.27 world keeps no step job once
        # its steps are done: its retry waits on a flow job keyed step_<id>).
        trial.tasks |= {
            str(r[0]) for r in conn.execute("SELECT identifier FROM graphile_worker._private_tasks")
        }


def _event_ids(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {str(r[0]) for r in conn.execute("SELECT id FROM workflow.workflow_events")}


def _timed(trial: Trial, stage: str, args: tuple[str, ...]) -> Cli:
    t0 = time.monotonic()
    result = wfctl(trial.db.dsn, *args)
    trial.seconds[stage] = time.monotonic() - t0
    return result


def run_trial(trial: Trial, folder: Path, log_dir: Path) -> Trial:
    """Doctor, dry run, apply, apply again, then the real runtime on the repaired world."""
    dsn, world = trial.db.dsn, trial.world
    all_ids = [r.run_id for r in world.runs.values()]
    healthy_ids = list(world.healthy())
    _state(trial)
    trial.info = _timed(trial, "info", ("info",))
    trial.doctor = _timed(
        trial, "doctor", ("doctor", "--all", "--min-age", "0s", "--limit", "1000")
    )
    repair = ("repair", "--all", *FORCE, *trial.unlock_args())
    trial.before = snapshot.digests(dsn)
    trial.runs_before = snapshot.run_rows(dsn, all_ids)
    trial.dry = _timed(trial, "dry_run", repair)
    trial.after_dry = snapshot.digests(dsn)
    applying = (*repair, "--apply", "--yes", "--reason", "corpus trial")
    ids_before = _event_ids(dsn)
    trial.apply = _timed(trial, "apply", applying)
    trial.repair_events = _event_ids(dsn) - ids_before
    trial.after_apply = snapshot.digests(dsn)
    trial.runs_after_apply = snapshot.run_rows(dsn, all_ids)
    trial.apply2 = _timed(trial, "apply2", applying)
    trial.after_apply2 = snapshot.digests(dsn)
    trial.doctor_after = wfctl(dsn, "doctor", "--all", "--min-age", "0s", "--limit", "1000")

    terminal = [r for r in healthy_ids if trial.statuses.get(r) in TERMINAL]
    trial.terminal_before = snapshot.run_rows(dsn, terminal, jobs=False)
    if world.kind == "healthy":  # an operator answers the waiting hook with wfctl
        trial.hook_resume = wfctl(dsn, "hooks", "resume", *HOOK_RESUME)
    # The runtime drives only what the database holds (no startup re-enqueue): a repair
    # that enqueued no wake-up must show as a run that never ends.
    t0 = time.monotonic()
    name = world.name.replace("/", "-")
    rt = judge.Runtime(dsn, log_dir, {"JUDGE_REENQUEUE": "0"}, name=name, folder=folder)
    rt.start(timeout=120)
    try:
        repaired = trial.apply is not None and trial.apply.report is not None
        waiting = [
            r for r in world.runs.values() if r.end is not None and (repaired or not r.corrupt)
        ]
        for run in world.runs.values():
            if run.resume is not None and (repaired or not run.corrupt):
                try:
                    rt.resume_hook(*run.resume)
                except OSError as exc:
                    trial.resumed[run.run_id] = str(exc)
        deadline = time.monotonic() + RUNTIME_BOUND
        for run in waiting:
            with contextlib.suppress(TimeoutError):  # judged by the tests, run by run
                judge.wait_for_status(
                    dsn, run.run_id, set(TERMINAL), max(1.0, deadline - time.monotonic())
                )
        if trial.hook_resume is not None:  # bounded apart: a run nothing wakes costs 20 s
            with contextlib.suppress(TimeoutError):
                judge.wait_for_status(
                    dsn, world.runs["hook_waiting"].run_id, set(TERMINAL), HOOK_RESUME_BOUND
                )
        for run in world.runs.values():
            trial.final[run.run_id] = judge.run_status(dsn, run.run_id)
            if trial.final[run.run_id] == "completed":
                trial.values[run.run_id] = rt.run_info(run.run_id).get("returnValue")
    finally:
        rt.stop()
        trial.runtime_log = rt.log_text()[-20000:]
    trial.seconds["runtime"] = time.monotonic() - t0
    trial.terminal_after = snapshot.run_rows(dsn, terminal, jobs=False)
    for run_id in all_ids:
        trial.duplicates[run_id] = snapshot.duplicate_events(dsn, run_id)
    t0 = time.monotonic()
    kit = judge.KITS[world.release]
    trial.read = read_back(dsn, all_ids, None if kit is judge.BETA29 else kit.cache)
    trial.seconds["read_back"] = time.monotonic() - t0
    log.info("%s trial: %s", world.name, {k: round(v, 1) for k, v in trial.seconds.items()})
    table = figures(trial)
    log.info("%s figures: %s", world.name, table)
    if os.environ.get("WFCTL_CORPUS_FIGURES"):  # one JSON line per world (docs/corpus.md)
        with open(os.environ["WFCTL_CORPUS_FIGURES"], "a") as fh:
            fh.write(json.dumps({"world": world.name, **table}) + "\n")
    return trial


def figures(trial: Trial) -> dict[str, Any]:
    """The world's row of the corpus table (docs/corpus.md): corrupt runs detected with their
    code, healthy runs flagged (false positives), repairable runs healed (doctor has nothing
    for them after the apply), corrupt runs the runtime then brought to their workflow's end
    (with its value), healthy runs byte-identical through the repair; and per corrupt run
    which of those it missed."""
    world = trial.world
    before = findings(trial.doctor.report if trial.doctor else None)
    after = findings(trial.doctor_after.report if trial.doctor_after else None)
    corrupt = list(world.corrupt().values())
    repairable = [r for r in corrupt if r.repairable]
    ending = [r for r in corrupt if r.end is not None]
    missed: dict[str, list[str]] = {}

    def miss(run_label: str, what: str) -> None:
        missed.setdefault(run_label, []).append(what)

    detected = 0
    for run in corrupt:
        found = before.get(run.run_id, set())
        if found and run.codes <= found:
            detected += 1
        else:
            miss(run.label, f"detected {sorted(found)}")
    healed = 0
    for run in repairable:
        if run.run_id in before and not after.get(run.run_id):
            healed += 1
        else:
            miss(run.label, f"after repair {sorted(after.get(run.run_id, set()))}")
    finished = 0
    for run in ending:
        ok = trial.final.get(run.run_id) == run.end and (
            run.end != "completed" or trial.values.get(run.run_id) == run.value
        )
        finished += ok
        if not ok:
            miss(run.label, f"ended {trial.final.get(run.run_id)}")
    healthy = world.healthy()
    flagged = sorted(f"{r.label}:{','.join(sorted(before[r.run_id]))}"
                     for r in healthy.values() if r.run_id in before)  # fmt: skip
    untouched = sum(
        trial.runs_before.get(r) == trial.runs_after_apply.get(r) and bool(trial.runs_after_apply)
        for r in healthy
    )
    return {
        "detected": f"{detected}/{len(corrupt)}",
        "false_positives": len(flagged),
        "flagged_healthy": flagged,
        "healed": f"{healed}/{len(repairable)}",
        "finished": f"{finished}/{len(ending)}",
        "untouched": f"{untouched}/{len(healthy)}",
        "missed": missed,
        "apply_status": trial.apply.status if trial.apply else None,
    }


@dataclass
class Control:
    """A faulted world left unrepaired: what the release's runtime did with it once the dead
    workers' locks were released (as graphile's 4-hour sweep does) and it restarted."""

    final: dict[str, str | None] = field(default_factory=dict)
    deliveries: dict[str, int] = field(default_factory=dict)  # flow deliveries per run
    new_events: dict[str, list[str]] = field(default_factory=dict)  # types written, per run
    resumed: dict[str, str] = field(default_factory=dict)  # run id -> resume error, if any


CONTROL_WATCH = 15.0  # seconds the unrepaired world is driven at least (loops accumulate)
LOOP_DELIVERIES = 10  # flow deliveries that tell a looping run from a wedged one (at most 5)


def run_control(db: Db, world: World, folder: Path, log_dir: Path) -> Control:
    """Release the dead workers' locks, restart the runtime (with its startup re-enqueue),
    resume the hooks workflows wait for, and watch: every run expected to end must end (bounded),
    and the world is driven at least CONTROL_WATCH seconds."""
    control = Control()
    ids = [r.run_id for r in world.runs.values()]
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL,"
            " run_at = now() WHERE locked_by IS NOT NULL"
        )
        before = dict(
            conn.execute(
                "SELECT run_id, count(*) FROM workflow.workflow_events GROUP BY 1"
            ).fetchall()
        )
    expected = worlds4.ALONE.get(world.release, {})
    ending = [r for r in world.runs.values() if expected.get(r.label) in ("heals", "fails")]
    name = world.name.replace("/", "-") + "-unrepaired"
    rt = judge.Runtime(db.dsn, log_dir, {}, name=name, folder=folder)
    t0 = time.monotonic()
    rt.start(timeout=120)
    try:
        for run in world.runs.values():
            if run.resume is not None and run.corrupt:
                # After the restart's own replay of the run (its first delivery answered):
                # a resume landing first would race that replay (see docs/corpus.md).
                with contextlib.suppress(TimeoutError):
                    judge.wait_until(
                        lambda r=run.run_id: rt.deliveries(r)[1] >= 1, 30.0, "a replay"
                    )
                try:
                    rt.resume_hook(*run.resume)
                except OSError as exc:
                    control.resumed[run.run_id] = str(exc)
        deadline = time.monotonic() + RUNTIME_BOUND
        for run in ending:
            with contextlib.suppress(TimeoutError):
                judge.wait_for_status(
                    db.dsn, run.run_id, set(TERMINAL), max(1.0, deadline - time.monotonic())
                )
        # A looping run is redelivered at the machine's pace (~1.8/s on 2 quiet cores, a
        # third of that loaded): wait, bounded, for the deliveries that tell it from a wedge.
        for run in world.runs.values():
            if expected.get(run.label) == "loops":
                with contextlib.suppress(TimeoutError):
                    judge.wait_until(
                        lambda r=run.run_id: rt.deliveries(r)[0] >= LOOP_DELIVERIES,
                        RUNTIME_BOUND,
                        "a looping run's redeliveries",
                    )
        time.sleep(max(0.0, CONTROL_WATCH - (time.monotonic() - t0)))
        started = rt.stats()["started"]
    finally:
        rt.stop()
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        for run_id in ids:
            control.final[run_id] = judge.run_status(db.dsn, run_id)
            control.deliveries[run_id] = int(started.get(run_id, 0))
            rows = conn.execute(
                "SELECT type FROM workflow.workflow_events WHERE run_id = %s ORDER BY id OFFSET %s",
                (run_id, int(before.get(run_id, 0))),
            ).fetchall()
            control.new_events[run_id] = [str(r[0]) for r in rows]
    log.info("%s unrepaired: %.1fs", world.name, time.monotonic() - t0)
    for run in world.corrupt().values():  # the table of docs/corpus.md
        log.info("%s unrepaired %s: %s, %d deliveries, new events %s", world.name, run.label,
                 control.final[run.run_id], control.deliveries[run.run_id],
                 control.new_events[run.run_id])  # fmt: skip
    return control


class Trials:
    """Each world's trial, run on first use and kept for the session. Why not a parametrized
    session fixture: pytest keeps one cached value per fixture, so tests alternating between
    worlds would re-run a trial (and its runtime) at every switch."""

    def __init__(self, server: Server, corpus: Corpus, base: Path) -> None:
        self.server = server
        self.corpus = corpus
        self.base = base
        self.done: dict[str, Trial] = {}
        self.controls: dict[str, Control] = {}

    def control(self, name: str) -> Control:
        """The world left unrepaired under its runtime (`run_control`), once per session."""
        if name not in self.controls:
            world = self.corpus.get(name)
            wait_idle(self.server, world.template)
            tag = worlds4.db_tag(name)
            db = _create_db(self.server, world.template, prefix=f"corpus_{tag}_control")
            folder, _ = judge.build_runtime(judge.KITS[world.release])
            log_dir = self.base / (name.replace("/", "-") + "-control")
            log_dir.mkdir()
            self.controls[name] = run_control(db, world, folder, log_dir)
        return self.controls[name]

    def get(self, name: str) -> Trial:
        if name not in self.done:
            world = self.corpus.get(name)
            wait_idle(self.server, world.template)
            tag = worlds4.db_tag(name)
            db = _create_db(self.server, world.template, prefix=f"corpus_{tag}_trial")
            folder, _ = judge.build_runtime(judge.KITS[world.release])
            log_dir = self.base / name.replace("/", "-")
            log_dir.mkdir()
            self.done[name] = run_trial(Trial(world, db), folder, log_dir)
        return self.done[name]


@pytest.fixture(scope="session")
def trials(
    pg_server: Server,
    corpus_worlds: Corpus,
    tmp_path_factory: pytest.TempPathFactory,
) -> Trials:
    return Trials(pg_server, corpus_worlds, tmp_path_factory.mktemp("trials"))


@pytest.fixture
def trial(request: pytest.FixtureRequest, trials: Trials) -> Trial:
    """The recorded trial of one world, `<release>/<healthy|faulted>` (parametrize
    indirectly to pick it)."""
    return trials.get(request.param)
