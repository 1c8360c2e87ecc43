"""The corpus: doctor and repair judged on worlds the real runtime made, crashed and moved.

Per release (beta.29, tests/corpus/worlds.py; every two-task release from 4.1.1 to 4.3.7 and
5.0.0-beta.27, tests/corpus/worlds4.py `RELEASES`), each
world is built once by that release's real runtime with fault injection,
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
from typing import Any

import pytest

from tests import judge
from tests.corpus import snapshot, worlds4
from tests.corpus.conftest import HOOK_RESUME_VALUE, LOOP_DELIVERIES, Trial, Trials, findings
from tests.corpus.worlds import CRASHES, TERMINAL, Run
from wfctl.repair import registry

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime"),
]

REPORT_ONLY = [  # beta.29: reported, never written: no append makes them right
    "hook_received_first",  # the runtime completed it over its odd log
    "shared_token_first",  # which run owns the token is the operator's call
    "shared_token_second",
]
CORRUPT_BETA29 = [
    "exhausted_job", "attributes_torn", *(c.label for c in CRASHES), "lost_wake_up",
    *REPORT_ONLY,
]  # fmt: skip
CORRUPT = {
    "beta29": CORRUPT_BETA29,
    **{v: [*(c.label for c in r.crashes), *r.extra] for v, r in worlds4.RELEASES.items()},
}
RELEASES = list(CORRUPT)
VERSION = {"beta29": "5.0.0-beta.29"}  # a corpus release name that is not its version


def marked(world: str, *rest: str) -> Any:
    """A parameter set of `<release>/<world>` (and more), marked `slowest` when the release's
    worlds are (CI runs them all the same; `-m "not slowest"` keeps a quick local loop)."""
    release = worlds4.RELEASES.get(world.split("/")[0])
    marks = [pytest.mark.slowest] if release is not None and release.slow else []
    return pytest.param(world, *rest, marks=marks, id="-".join((world, *rest)))


WORLDS = [marked(f"{r}/{kind}") for r in RELEASES for kind in ("healthy", "faulted")]
HEALTHY = [marked(f"{r}/healthy") for r in RELEASES]
FAULTED = [marked(f"{r}/faulted") for r in RELEASES]
CASES = [(f"{r}/faulted", label) for r in RELEASES for label in CORRUPT[r]]
REPAIRABLE = [(w, label) for w, label in CASES if label not in REPORT_ONLY]
REPORT_ONLY_CASES = [("beta29/faulted", label) for label in REPORT_ONLY]
worlds = pytest.mark.parametrize("trial", WORLDS, indirect=True)
faulted = pytest.mark.parametrize("trial", FAULTED, indirect=True)


def cases(pairs: list[tuple[str, str]]) -> pytest.MarkDecorator:
    """Parametrize (trial, label) over `<release>/faulted` worlds and their corrupt runs."""
    return pytest.mark.parametrize(
        ("trial", "label"), [marked(w, label) for w, label in pairs], indirect=["trial"]
    )


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


@worlds
def test_world_holds_what_operators_have(trial: Trial) -> None:
    """Background runs in every state; beta.29: a long sleeper with hop continuations of two
    settings; 4.x: step jobs on their own task, the long sleeper's one delayed wake-up (and,
    in the faulted world, a sleeper with two); in a faulted world, jobs still locked by the
    SIGKILLed runtime's workers."""
    healthy = {trial.statuses[r] for r in trial.world.healthy()}
    assert healthy == {"completed", "failed", "cancelled", "running", "pending"}
    sleeper = run_of(trial, "long_sleep").run_id
    if trial.world.release == "beta29":
        assert len(trial.hop_keys.get(sleeper, [])) == 2, trial.hop_keys
    else:
        assert {"workflow_flows", "workflow_steps"} <= trial.tasks, trial.tasks
        assert trial.flow_jobs.get(sleeper) == 1, trial.flow_jobs
        if "piled_sleeper" in trial.world.runs:
            piled = run_of(trial, "piled_sleeper").run_id
            assert trial.flow_jobs.get(piled, 0) >= 2, trial.flow_jobs
    assert set(trial.statuses) == {r.run_id for r in trial.world.runs.values()}
    if trial.world.kind == "faulted":
        assert trial.job_locks, "the crash left no locked job"
        assert {w for _, w in trial.job_locks} == set(trial.world.dead_workers)
        assert {r for r, _ in trial.job_locks} <= set(trial.world.corrupt())


# --- doctor --------------------------------------------------------------------------------------


@worlds
def test_info_names_the_release_and_exits_0(trial: Trial) -> None:
    """`wfctl info` on the restored world (healthy or torn: info judges the world, not its
    runs) exits 0 and names the release whose runtime made it among what the world can be."""
    assert trial.info is not None and trial.info.report is not None, trial.info
    assert trial.info.status == 0, (trial.info.stderr, trial.info.report)
    version = VERSION.get(trial.world.release, trial.world.release)
    assert version in json.dumps(trial.info.report.get("release")), trial.info.report


@worlds
def test_doctor_sees_no_drift_in_a_restored_world(trial: Trial) -> None:
    assert trial.doctor is not None
    assert findings(trial.doctor.report).get(None, set()) == set()


@worlds
def test_doctor_flags_no_healthy_run(trial: Trial) -> None:
    assert trial.doctor is not None
    flagged = set(findings(trial.doctor.report)) & set(trial.world.healthy())
    assert not flagged, labels(trial, flagged)


@pytest.mark.parametrize("trial", HEALTHY, indirect=True)
def test_doctor_exits_0_on_a_healthy_world(trial: Trial) -> None:
    assert trial.doctor is not None and trial.doctor.report is not None
    assert findings(trial.doctor.report) == {}
    assert trial.doctor.status == 0


@cases(CASES)
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


@worlds
def test_dry_run_writes_nothing(trial: Trial) -> None:
    assert trial.dry is not None and trial.dry.report is not None, trial.dry
    assert snapshot.changed(trial.before, trial.after_dry) == []
    assert "wfctl" not in trial.after_dry["<schemas>"].split(",")


@worlds
def test_repair_applies_without_a_prior_bootstrap(trial: Trial) -> None:
    require_applied(trial)


@cases(REPAIRABLE)
def test_repair_heals_the_corrupt_run(trial: Trial, label: str) -> None:
    """Flagged before the repair, nothing left after it."""
    run = run_of(trial, label)
    assert trial.doctor is not None and trial.doctor_after is not None
    assert run.run_id in findings(trial.doctor.report), f"{label} was never flagged"
    require_applied(trial)
    assert findings(trial.doctor_after.report).get(run.run_id, set()) == set()


@cases(REPORT_ONLY_CASES)
def test_repair_keeps_a_report_only_run_as_it_is(trial: Trial, label: str) -> None:
    """Still reported after the repair, and not written."""
    run = run_of(trial, label)
    assert trial.doctor is not None and trial.doctor_after is not None
    assert run.run_id in findings(trial.doctor.report), f"{label} was never flagged"
    require_applied(trial)
    assert run.run_id in findings(trial.doctor_after.report)
    before, after = trial.runs_before[run.run_id], trial.runs_after_apply[run.run_id]
    assert before == after, snapshot.changed(before, after)


@worlds
def test_a_second_apply_writes_nothing(trial: Trial) -> None:
    require_applied(trial)
    assert trial.apply2 is not None and trial.apply2.status == doctor_exit_code(trial), trial.apply2
    assert snapshot.changed(trial.after_apply, trial.after_apply2) == []


@worlds
def test_repair_leaves_every_healthy_run_untouched(trial: Trial) -> None:
    """Rows, events and queue jobs of every healthy run, byte for byte."""
    require_applied(trial)
    healthy = trial.world.healthy()
    touched = [r for r in healthy if trial.runs_before.get(r) != trial.runs_after_apply.get(r)]
    assert not touched, labels(trial, set(touched))


# --- the runtime on the repaired world ---------------------------------------------------------


@cases(CASES)
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


@worlds
def test_every_log_reads_back_through_the_package(trial: Trial) -> None:
    """events.list() (and runs/steps/hooks) of the real package read every run, and no run
    holds a duplicate event; in a world with corrupt runs, after their repair."""
    if trial.world.corrupt():
        require_applied(trial)
    unread = {r: v for r, v in trial.read.items() if not v.get("ok")}
    assert not unread, unread
    assert set(trial.read) == {r.run_id for r in trial.world.runs.values()}
    assert {r: d for r, d in trial.duplicates.items() if d} == {}


ALONE_CASES = [(f"{r}/faulted", label) for r, labels in worlds4.ALONE.items() for label in labels]
# What the release's runtime does next with an unrepaired fault, and the weight doctor owes it:
# a run the runtime wedges, spins or fails is critical; one it heals or had already finished
# is not (WF101 warning, WF103 info, WF121 warning, each saying why).
CRITICAL_ALONE = frozenset({"wedges", "loops", "fails"})


def weights(trial: Trial, run_id: str) -> dict[str, str]:
    """{code: severity} of doctor's findings on one run (a sample's own weight, else its
    check's)."""
    assert trial.doctor is not None and trial.doctor.report is not None
    out: dict[str, str] = {}
    for check in trial.doctor.report.get("checks", []):
        for sample in check.get("samples", []):
            if sample.get("run_id") == run_id:
                out[check["code"]] = sample.get("severity") or check["severity"]
    return out


@cases(ALONE_CASES)
def test_doctor_weighs_the_fault_as_its_runtime_does(trial: Trial, label: str) -> None:
    """The finding's weight is what the release's own runtime does next with it (the control
    below measures that): critical where the run wedges, loops or fails, below critical where
    the runtime heals it or had already finished it."""
    run = run_of(trial, label)
    alone = worlds4.ALONE[trial.world.release][label]
    found = weights(trial, run.run_id)
    assert run.codes <= set(found), (label, found)
    weight = {found[code] for code in run.codes}
    if alone in CRITICAL_ALONE:
        assert weight == {"critical"}, (label, alone, found)
    else:
        assert "critical" not in weight, (label, alone, found)


@cases(ALONE_CASES)
def test_unrepaired_the_runtime_does_what_the_release_does(
    trial: Trial, trials: Trials, label: str
) -> None:
    """The control: the same faulted world without a repair, its dead workers' locks released
    and the release's runtime restarted (startup re-enqueue included). Each crash shows what
    that release does next, which is what doctor's severity says: a WF111 run wedges, a WF112
    or WF102 run spins in redeliveries, a 4.3.x or beta.27 orphan hook heals, a 4.1.x or 4.2.0
    one fails the run with `hook_conflict`, an orphan step heals where it can happen."""
    run = run_of(trial, label)
    control = trials.control(trial.world.name)
    alone = worlds4.ALONE[trial.world.release][label]
    final, new = control.final[run.run_id], control.new_events[run.run_id]
    seen = (final, control.deliveries[run.run_id], new)
    if alone in ("wedges", "loops"):
        assert final == "running" and new == [], seen
        if alone == "wedges":
            assert control.deliveries[run.run_id] <= 5, seen
        else:
            assert control.deliveries[run.run_id] >= LOOP_DELIVERIES, seen
    elif alone == "heals":
        assert final == run.end, seen
    elif alone == "fails":
        assert final == "failed" and "hook_conflict" in new, seen
    else:  # ended before the crash was over
        assert final == run.end and new == [], seen


@pytest.mark.parametrize("trial", HEALTHY, indirect=True)
def test_wfctl_hooks_resume_then_the_runtime_finishes_the_run(trial: Trial) -> None:
    """`wfctl hooks resume corpus-wait '{"n": 5}'` on the restored world, then the release's
    runtime (without its startup re-enqueue: only what the database holds drives a run)
    finishes the waiting run with the resumed payload, as after the package's own
    resumeHook()."""
    run = run_of(trial, "hook_waiting")
    assert trial.hook_resume is not None and trial.hook_resume.status == 0, trial.hook_resume
    assert trial.final[run.run_id] == "completed", trial.final[run.run_id]
    assert trial.values[run.run_id] == HOOK_RESUME_VALUE
    assert trial.duplicates[run.run_id] == []


def restored_shapes(trial: Trial) -> list[tuple[str, str, frozenset[str], set[frozenset[str]]]]:
    """(run label, event type, payload keys of an event the repair wrote, the key sets that
    release's own runtime wrote for that type in the same world), read back through the
    release's package."""
    written: dict[str, set[frozenset[str]]] = {}
    restored: list[tuple[str, str, frozenset[str]]] = []
    for result in trial.read.values():
        for event in result.get("events", []):
            keys = frozenset((event.get("eventData") or {}).keys())
            if event["eventId"] in trial.repair_events:
                restored.append((result["runId"], event["eventType"], keys))
            else:
                written.setdefault(event["eventType"], set()).add(keys)
    by_id = {r.run_id: r.label for r in trial.world.runs.values()}
    return [(by_id.get(r, r), t, k, written.get(t, set())) for r, t, k in restored]


@faulted
def test_restored_events_carry_no_key_the_release_does_not_write(trial: Trial) -> None:
    """Every event the repair wrote carries only payload keys that release's own runtime
    writes together for that event type (4.1.1 `wait_completed` and `step_started` carry
    none, its `step_completed` only `result`; 4.3.7 adds `stepName`, ...): what the
    release's replay reads, no more. Keys the runtime writes and the repair leaves out are
    listed in docs/corpus.md (the runtime still finished every such run)."""
    require_applied(trial)
    assert trial.repair_events, "the apply wrote no event"
    shapes = restored_shapes(trial)
    foreign = [
        (label, etype, sorted(keys), sorted(map(sorted, seen)))
        for label, etype, keys, seen in shapes
        if seen and not any(keys <= shape for shape in seen)
    ]
    assert not foreign, foreign


@worlds
def test_the_runtime_leaves_terminal_healthy_runs_untouched(trial: Trial) -> None:
    """The runtime restarted on the (repaired) world: finished healthy runs keep every row and
    event; live healthy runs that end (the pending one) reach their end."""
    assert snapshot.changed(trial.terminal_before, trial.terminal_after) == []
    for run in trial.world.healthy().values():
        if trial.hook_resume is not None and run.label == "hook_waiting":
            continue  # answered by wfctl (test_wfctl_hooks_resume_...)
        if run.end is not None:
            assert trial.final[run.run_id] == run.end, run.label
            if run.end == "completed":
                assert trial.values[run.run_id] == run.value, run.label
        else:
            assert trial.final[run.run_id] not in TERMINAL, run.label
