"""The corpus: doctor and repair judged on worlds the real runtime made, crashed and moved.

Each world (tests/corpus/worlds.py) is built once by the real runtime with fault injection,
pg_dump'ed and restored into a fresh database, then put on trial once (conftest.run_trial):
`doctor --all`, `repair --all` dry run, `repair --all --apply` with no prior bootstrap (twice),
then the real runtime on the repaired world. The tests below judge one recorded stage each:

- doctor flags exactly the corrupted runs (none of the healthy ones, nothing about the
  restored catalog), and a world holding only healthy runs exits 0;
- the dry run writes nothing (a digest of every row of every table in every schema, and no
  new schema); the apply heals every repairable run; a second apply writes nothing; no
  healthy run's rows, events or jobs change;
- the runtime (without its startup re-enqueue: only what the database holds drives a run)
  brings every formerly corrupted run to the state its workflow ends in, with its return
  value, no duplicate event, and a log the package's own `events.list()` reads; terminal
  healthy runs stay byte-identical.
"""

from __future__ import annotations

import json

import pytest

from tests import judge
from tests.corpus import snapshot
from tests.corpus.conftest import Trial, findings
from tests.corpus.worlds import CRASHES, TERMINAL, Run
from wfctl.repair import registry

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime"),
]

REPORT_ONLY = [  # reported, never written: no append makes them right
    "hook_received_first",  # the runtime completed it over its odd log
    "shared_token_first",  # which run owns the token is the operator's call
    "shared_token_second",
]
CORRUPT = [
    "exhausted_job", "attributes_torn", *(c.label for c in CRASHES), "lost_wake_up",
    *REPORT_ONLY,
]  # fmt: skip
REPAIRABLE = [label for label in CORRUPT if label not in REPORT_ONLY]
WORLDS = ["healthy", "faulted"]
faulted = pytest.mark.parametrize("trial", ["faulted"], indirect=True)


def run_of(trial: Trial, label: str) -> Run:
    return trial.world.runs[label]


def labels(trial: Trial, run_ids: set[str | None]) -> list[str]:
    by_id = {r.run_id: r.label for r in trial.world.runs.values()}
    return sorted(by_id.get(r, str(r)) for r in run_ids)


def require_applied(trial: Trial) -> None:
    """The stage judged after a repair needs the repair to have run: nothing refused, nothing
    repairable left, and its verdict (exit, `after`) is doctor's right after it."""
    assert trial.apply is not None and trial.apply2 is not None
    report = trial.apply.report or {}
    refused = [i for i in report.get("items", []) if i.get("outcome") == "refused"]
    left = {code: n for code, n in report.get("after", {}).items() if n}
    repairable_left = {code for code in left if code not in registry.REPORT_ONLY}
    assert trial.apply.report is not None and not refused and not repairable_left, (
        trial.apply.stderr,
        refused,
        left,
    )
    # the second apply writes nothing, so doctor after it is doctor after the first
    doctor_exit = doctor_exit_code(trial)
    assert trial.apply.status == doctor_exit and left == doctor_counts(trial), (
        trial.apply.status,
        left,
        doctor_exit,
        doctor_counts(trial),
    )


def doctor_exit_code(trial: Trial) -> int:
    assert trial.doctor_after is not None and trial.doctor_after.report is not None
    return int(trial.doctor_after.report["summary"]["exit_code"])


def doctor_counts(trial: Trial) -> dict[str, int]:
    assert trial.doctor_after is not None and trial.doctor_after.report is not None
    return {c["code"]: c["count"] for c in trial.doctor_after.report["checks"] if c["count"]}


# --- the worlds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_world_holds_what_operators_have(trial: Trial) -> None:
    """Background runs in every state, a long sleeper with hop continuations of two settings;
    in the faulted world, jobs still locked by the SIGKILLed runtime's workers."""
    healthy = {trial.statuses[r] for r in trial.world.healthy()}
    assert healthy == {"completed", "failed", "cancelled", "running", "pending"}
    sleeper = run_of(trial, "long_sleep").run_id
    assert len(trial.hop_keys.get(sleeper, [])) == 2, trial.hop_keys
    assert set(trial.statuses) == {r.run_id for r in trial.world.runs.values()}
    if trial.world.name == "faulted":
        assert trial.job_locks, "the crash left no locked job"
        assert {w for _, w in trial.job_locks} == set(trial.world.dead_workers)
        assert {r for r, _ in trial.job_locks} <= set(trial.world.corrupt())


# --- doctor --------------------------------------------------------------------------------------


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_doctor_sees_no_drift_in_a_restored_world(trial: Trial) -> None:
    assert trial.doctor is not None
    assert findings(trial.doctor.report).get(None, set()) == set()


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_doctor_flags_no_healthy_run(trial: Trial) -> None:
    assert trial.doctor is not None
    flagged = set(findings(trial.doctor.report)) & set(trial.world.healthy())
    assert not flagged, labels(trial, flagged)


@pytest.mark.parametrize("trial", ["healthy"], indirect=True)
def test_doctor_exits_0_on_a_healthy_world(trial: Trial) -> None:
    assert trial.doctor is not None and trial.doctor.report is not None
    assert findings(trial.doctor.report) == {}
    assert trial.doctor.status == 0


@faulted
@pytest.mark.parametrize(
    "label",
    CORRUPT,
)
def test_doctor_flags_the_corrupt_run(trial: Trial, label: str) -> None:
    run = run_of(trial, label)
    assert trial.doctor is not None
    found = findings(trial.doctor.report).get(run.run_id, set())
    assert found, f"{label} ({run.family}) not flagged"
    assert run.codes <= found, (label, found)


@faulted
def test_doctor_shows_who_holds_a_dead_workers_lock(trial: Trial) -> None:
    assert trial.doctor is not None and trial.doctor.report is not None
    text = json.dumps(trial.doctor.report)
    missing = [w for w in trial.world.dead_workers if w not in text]
    assert not missing, missing


# --- repair --------------------------------------------------------------------------------------


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_dry_run_writes_nothing(trial: Trial) -> None:
    assert trial.dry is not None and trial.dry.report is not None, trial.dry
    assert snapshot.changed(trial.before, trial.after_dry) == []
    assert "wfctl" not in trial.after_dry["<schemas>"].split(",")


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_repair_applies_without_a_prior_bootstrap(trial: Trial) -> None:
    require_applied(trial)


@faulted
@pytest.mark.parametrize(
    "label",
    REPAIRABLE,
)
def test_repair_heals_the_corrupt_run(trial: Trial, label: str) -> None:
    """Flagged before the repair, nothing left after it."""
    run = run_of(trial, label)
    assert trial.doctor is not None and trial.doctor_after is not None
    assert run.run_id in findings(trial.doctor.report), f"{label} was never flagged"
    require_applied(trial)
    assert findings(trial.doctor_after.report).get(run.run_id, set()) == set()


@faulted
@pytest.mark.parametrize(
    "label",
    REPORT_ONLY,
)
def test_repair_keeps_a_report_only_run_as_it_is(trial: Trial, label: str) -> None:
    """Still reported after the repair, and not written."""
    run = run_of(trial, label)
    assert trial.doctor is not None and trial.doctor_after is not None
    assert run.run_id in findings(trial.doctor.report), f"{label} was never flagged"
    require_applied(trial)
    assert run.run_id in findings(trial.doctor_after.report)
    before, after = trial.runs_before[run.run_id], trial.runs_after_apply[run.run_id]
    assert before == after, snapshot.changed(before, after)


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_a_second_apply_writes_nothing(trial: Trial) -> None:
    require_applied(trial)
    assert trial.apply2 is not None and trial.apply2.status == doctor_exit_code(trial), trial.apply2
    assert snapshot.changed(trial.after_apply, trial.after_apply2) == []


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_repair_leaves_every_healthy_run_untouched(trial: Trial) -> None:
    """Rows, events and queue jobs of every healthy run, byte for byte."""
    require_applied(trial)
    healthy = trial.world.healthy()
    touched = [r for r in healthy if trial.runs_before.get(r) != trial.runs_after_apply.get(r)]
    assert not touched, labels(trial, set(touched))


# --- the runtime on the repaired world ---------------------------------------------------------


@faulted
@pytest.mark.parametrize("label", CORRUPT)
def test_the_runtime_finishes_the_repaired_run(trial: Trial, label: str) -> None:
    run = run_of(trial, label)
    require_applied(trial)
    assert trial.resumed.get(run.run_id) is None, trial.resumed[run.run_id]
    if run.end is None:  # it waits (for a resume no one can address)
        assert trial.final[run.run_id] not in TERMINAL, label
    else:
        assert trial.final[run.run_id] == run.end, (label, trial.runtime_log[-3000:])
    if run.end == "completed":
        assert trial.values[run.run_id] == run.value
    assert trial.duplicates[run.run_id] == []


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_every_log_reads_back_through_the_package(trial: Trial) -> None:
    """events.list() (and runs/steps/hooks) of the real package read every run, and no run
    holds a duplicate event; in a world with corrupt runs, after their repair."""
    if trial.world.corrupt():
        require_applied(trial)
    unread = {r: v for r, v in trial.read.items() if not v.get("ok")}
    assert not unread, unread
    assert set(trial.read) == {r.run_id for r in trial.world.runs.values()}
    assert {r: d for r, d in trial.duplicates.items() if d} == {}


@pytest.mark.parametrize("trial", WORLDS, indirect=True)
def test_the_runtime_leaves_terminal_healthy_runs_untouched(trial: Trial) -> None:
    """The runtime restarted on the (repaired) world: finished healthy runs keep every row and
    event; live healthy runs that end (the pending one) reach their end."""
    assert snapshot.changed(trial.terminal_before, trial.terminal_after) == []
    for run in trial.world.healthy().values():
        if run.end is not None:
            assert trial.final[run.run_id] == run.end, run.label
            if run.end == "completed":
                assert trial.values[run.run_id] == run.value, run.label
        else:
            assert trial.final[run.run_id] not in TERMINAL, run.label
