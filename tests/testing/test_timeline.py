"""`wfctl runs show RUN`: the run drawn as a timeline from its event log (steps, retries with
their back-off, sleeps, hooks, children), and the same data under `timeline` in JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.testing import flows
from wfctl.cli.timeline import build, render
from wfctl.runtime import serde
from wfctl.runtime.engine import Event, short_name


def test_a_run_as_a_timeline(world: Any, run_cli: Any) -> None:
    run_id = world.start(flows.busy_day, "k1")
    world.drive(run_id)  # the flaky step fails, backs off (the fake clock passes it) ...
    while world.status(run_id) == "running" and not world._tokens(run_id):
        world.clock.advance("10m")
        world.drive(run_id)
    world.resume_hook("ok-k1", {"answer": "yes"})
    assert world.finish(run_id) == "ok k1, yes, picked k1"

    status, out, err = run_cli("--dsn", world.dsn, "--format", "json", "runs", "show", run_id)
    assert status == 0, err
    timeline = json.loads(out)["timeline"]
    assert timeline["status"] == "completed" and timeline["ongoing"] is False
    kinds = [(lane["kind"], lane["status"]) for lane in timeline["lanes"]]
    assert kinds == [
        ("step", "completed"),
        ("hook", "received"),
        ("sleep", "done"),
        ("child", "completed"),
    ]
    step, hook, sleep, child = timeline["lanes"]
    assert step["name"] == short_name(flows.flaky.name)
    segments = [(s["kind"], s.get("attempt"), s.get("outcome")) for s in step["segments"]]
    assert segments == [
        ("attempt", 1, "retried"),
        ("backoff", None, None),
        ("attempt", 2, "retried"),
        ("backoff", None, None),
        ("attempt", 3, "completed"),
    ]
    assert step["segments"][0]["error"] == "provider down (1)"
    backoff = step["segments"][1]
    assert backoff["end_ms"] - backoff["start_ms"] >= 5_000  # 10s back-off with jitter
    assert hook["name"] == "ok-k1" and len(hook["marks"]) == 1
    assert sleep["segments"][0]["end_ms"] - sleep["segments"][0]["start_ms"] > 7_100_000  # 2h
    assert child["name"] == short_name(flows.courier.name)
    assert child["child_run_id"].startswith("wrun_")
    ends = [s["end_ms"] for lane in timeline["lanes"] for s in lane["segments"]]
    assert max(ends) <= timeline["duration_ms"]

    status, out, err = run_cli("--dsn", world.dsn, "runs", "show", run_id)
    assert status == 0, err
    drawn = out.split("timeline: ", 1)[1].splitlines()
    assert drawn[0].startswith(("3h", "4h")) and "(completed)" in drawn[0]
    rows = {line.split("|")[0].strip(): line for line in drawn[2:6]}
    assert set(rows) == {
        f"step  {short_name(flows.flaky.name)}",
        "hook  ok-k1",
        "sleep 2h00m",
        f"child {short_name(flows.courier.name)}",
    }
    row = rows[f"step  {short_name(flows.flaky.name)}"]
    assert "▒" in row and "█" in row and "completed in " in row and ", 3 attempts" in row
    assert "◆" in rows["hook  ok-k1"]
    assert "step attempt" in drawn[6] and "back-off" in drawn[6]
    assert drawn[7] == f"  child {child['name']}: {child['child_run_id']}"
    status, plain, _ = run_cli("--dsn", world.dsn, "--format", "plain", "runs", "show", run_id)
    assert status == 0 and "#" in plain and "x" in plain
    assert all(ord(c) < 128 for c in plain.split("timeline: ", 1)[1].split("\n\n")[0])


def _events(*rows: tuple[float, str, str | None, dict[str, Any] | None]) -> list[Event]:
    origin = datetime(2030, 1, 1, tzinfo=UTC)
    return [
        Event(f"e{i:03d}", kind, corr, data, origin + timedelta(seconds=at))
        for i, (at, kind, corr, data) in enumerate(rows)
    ]


def test_an_active_run_with_a_crash_mid_step_and_a_pending_backoff() -> None:
    """Pure: an attempt started again without an end (a crash) is `interrupted`; an open
    back-off lasts until its retryAfter; an active run's open segments have `end: null` and
    are drawn to `now`."""
    origin = datetime(2030, 1, 1, tzinfo=UTC)
    error = serde.dumps({"name": "ValueError", "message": "bad\ntrace"}, "an error")
    events = _events(
        (0, "run_created", None, {}),
        (1, "run_started", None, None),
        (1, "step_created", "step_a", {"stepName": "step//py:shop//pay"}),
        (1, "step_started", "step_a", None),
        (5, "step_started", "step_a", None),  # the first driver died mid-step
        (6, "step_retrying", "step_a", {"error": error, "retryAfter": origin + timedelta(60)}),
        (6, "hook_created", "hook_b", {"token": "tok"}),
    )
    timeline = build(events, origin + timedelta(seconds=10))
    assert timeline["ongoing"] is True and timeline["end"] is None
    assert timeline["duration_ms"] == 10_000
    step, hook = timeline["lanes"]
    assert [(s["kind"], s.get("outcome")) for s in step["segments"]] == [
        ("attempt", "interrupted"),
        ("attempt", "retried"),
        ("backoff", None),
    ]
    assert step["segments"][1]["error"] == "bad"
    assert step["segments"][2]["end_ms"] == 60 * 86400_000  # until retryAfter
    assert step["status"] == "retrying" and step["name"] == "shop.pay"
    assert hook["status"] == "waiting" and hook["segments"][0]["end"] is None
    lines = render(timeline, width=80, ascii_only=True)
    assert lines[0].startswith("timeline: 10.0s (running, ongoing)")
    assert lines[3].rstrip().endswith("| waiting") and "~" in lines[3]
    assert all(len(line) <= 80 for line in lines)


def test_a_failed_run_ends_what_was_open() -> None:
    error = serde.dumps({"name": "FatalError", "message": "card declined"}, "an error")
    events = _events(
        (0, "run_created", None, {}),
        (0, "step_started", "step_a", {"stepName": "step//py:shop//pay"}),
        (2, "step_failed", "step_a", {"error": error}),
        (2, "wait_created", "wait_b", {}),
        (3, "run_failed", None, {}),
    )
    timeline = build(events, datetime(2031, 1, 1, tzinfo=UTC))
    step, wait = timeline["lanes"]
    assert timeline["status"] == "failed" and timeline["duration_ms"] == 3000
    assert step["status"] == "failed" and step["segments"][0]["error"] == "card declined"
    assert wait["status"] == "ended with the run" and wait["segments"][0]["end_ms"] == 3000
    note = render(timeline, width=100)[2]
    assert note.endswith("failed in 2.0s: card declined")
    assert render(build([], datetime(2031, 1, 1, tzinfo=UTC)))[1].startswith("  (no steps")
