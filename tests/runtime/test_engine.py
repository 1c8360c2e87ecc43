"""The replay engine alone: no database, events built by hand."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from wfctl.runtime import engine as eng
from wfctl.runtime import serde
from wfctl.runtime.api import Workflows, sleep

wf = Workflows()
RUN = "wrun_01J0000000000000000000000A"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@wf.step
def inc(x: int) -> int:
    return x + 1


@wf.step
def other(x: int) -> int:
    return x


@wf.workflow
async def two_steps(x: int) -> int:
    a = await inc(x)
    return await inc(a)


@wf.workflow
async def changed(x: int) -> int:
    a = await other(x)  # the code now calls a different step first
    return await inc(a)


@wf.workflow
async def fan_out(x: int) -> list[int]:
    return list(await asyncio.gather(inc(x), inc(x + 10)))


@wf.workflow
async def napper() -> str:
    await sleep("5m")
    return "rested"


class Log:
    def __init__(self) -> None:
        self.events: list[eng.Event] = []

    def add(self, type_: str, corr: str | None = None, **data: object) -> eng.Event:
        n = len(self.events) + 1
        ev = eng.Event(f"evnt_{n:026d}", type_, corr, dict(data) or None, T0 + timedelta(seconds=n))
        self.events.append(ev)
        return ev


def start_of_run() -> Log:
    log = Log()
    log.add("run_created", input=serde.dumps([1]))
    log.add("run_started")
    return log


def test_fresh_run_asks_for_its_first_step() -> None:
    e = eng.Engine(RUN, two_steps.fn, [1])
    out = e.feed_all(start_of_run().events)
    assert isinstance(out, eng.Pending)
    (cmd,) = out.commands
    assert isinstance(cmd, eng.StartStep) and cmd.new and cmd.step_name == inc.name
    assert serde.loads(cmd.input) == [1]
    assert cmd.correlation_id.startswith("step_") and cmd.correlation_id[5:15] == RUN[5:15]


def test_replay_of_a_complete_log_completes_without_commands() -> None:
    log = start_of_run()
    first = eng.Engine(RUN, two_steps.fn, [1])
    first.feed_all(log.events)
    corr1 = first.outcome().commands[0].correlation_id  # type: ignore[union-attr]
    log.add("step_created", corr1, stepName=inc.name, input=serde.dumps([1]))
    log.add("step_started", corr1)
    log.add("step_completed", corr1, result=serde.dumps(2))
    e = eng.Engine(RUN, two_steps.fn, [1])
    out = e.feed_all(log.events)
    assert isinstance(out, eng.Pending)
    (cmd,) = out.commands
    assert cmd.correlation_id != corr1 and serde.loads(cmd.input) == [2]  # type: ignore[union-attr]
    log.add("step_created", cmd.correlation_id, stepName=inc.name, input=serde.dumps([2]))
    log.add("step_started", cmd.correlation_id)
    log.add("step_completed", cmd.correlation_id, result=serde.dumps(3))
    final = eng.Engine(RUN, two_steps.fn, [1]).feed_all(log.events)
    assert final == eng.Completed(serde.dumps(3))


def test_unfinished_step_in_the_log_is_restarted_not_recreated() -> None:
    log = start_of_run()
    corr = eng.Engine(RUN, two_steps.fn, [1]).feed_all(log.events).commands[0].correlation_id  # type: ignore[union-attr]
    log.add("step_created", corr, stepName=inc.name, input=serde.dumps([1]))
    log.add("step_started", corr)
    out = eng.Engine(RUN, two_steps.fn, [1]).feed_all(log.events)
    (cmd,) = out.commands  # type: ignore[union-attr]
    assert isinstance(cmd, eng.StartStep) and not cmd.new and cmd.attempts == 1


def test_divergence_names_the_first_diverging_event() -> None:
    log = start_of_run()
    corr = eng.Engine(RUN, two_steps.fn, [1]).feed_all(log.events).commands[0].correlation_id  # type: ignore[union-attr]
    bad = log.add("step_created", corr, stepName=inc.name, input=serde.dumps([1]))
    out = eng.Engine(RUN, changed.fn, [1]).feed_all(log.events)
    assert isinstance(out, eng.Diverged)
    assert out.event_id == bad.id and out.code == "REPLAY_DIVERGENCE"
    assert inc.name in out.message and other.name in out.message


def test_divergence_on_an_entity_the_code_no_longer_asks_for() -> None:
    log = start_of_run()
    log.add("wait_created", "wait_01J0000000000000000000000Z", resumeAt=T0)
    out = eng.Engine(RUN, two_steps.fn, [1]).feed_all(log.events)
    assert isinstance(out, eng.Diverged) and out.event_id == log.events[-1].id


def test_gather_asks_for_both_steps_and_takes_results_in_any_order() -> None:
    log = start_of_run()
    cmds = eng.Engine(RUN, fan_out.fn, [1]).feed_all(log.events).commands  # type: ignore[union-attr]
    assert [serde.loads(c.input) for c in cmds] == [[1], [11]]  # type: ignore[union-attr]
    for c in cmds:
        log.add("step_created", c.correlation_id, stepName=inc.name, input=c.input)  # type: ignore[union-attr]
    log.add("step_completed", cmds[1].correlation_id, result=serde.dumps(12))
    log.add("step_completed", cmds[0].correlation_id, result=serde.dumps(2))
    assert eng.Engine(RUN, fan_out.fn, [1]).feed_all(log.events) == eng.Completed(
        serde.dumps([2, 12])
    )


def test_sleep_uses_the_log_clock_and_is_deterministic() -> None:
    log = start_of_run()
    (cmd,) = eng.Engine(RUN, napper.fn, []).feed_all(log.events).commands  # type: ignore[union-attr]
    assert isinstance(cmd, eng.CreateWait)
    # the workflow body starts when the first event (run_created) is fed: its clock
    assert cmd.resume_at == log.events[0].created_at + timedelta(minutes=5)
    log.add("wait_created", cmd.correlation_id, resumeAt=cmd.resume_at)
    (again,) = eng.Engine(RUN, napper.fn, []).feed_all(log.events).commands  # type: ignore[union-attr]
    assert isinstance(again, eng.AwaitWait) and again.resume_at == cmd.resume_at
    log.add("wait_completed", cmd.correlation_id, resumeAt=cmd.resume_at)
    assert eng.Engine(RUN, napper.fn, []).feed_all(log.events) == eng.Completed(
        serde.dumps("rested")
    )


def test_a_sleep_never_ends_before_the_instant_asked_for() -> None:
    """The world keeps a wait's resumeAt in milliseconds: a log clock with microseconds is
    rounded up, so the deadline is a whole millisecond and never early."""
    log = Log()
    log.events.append(
        eng.Event("evnt_1", "run_created", None, {"input": serde.dumps([])},
                  T0 + timedelta(microseconds=123_456))
    )  # fmt: skip
    (cmd,) = eng.Engine(RUN, napper.fn, []).feed_all(log.events).commands  # type: ignore[union-attr]
    assert isinstance(cmd, eng.CreateWait)
    assert cmd.resume_at == T0 + timedelta(minutes=5, milliseconds=124)


def test_engine_does_no_io() -> None:
    from pathlib import Path

    import wfctl.runtime.engine as module

    source = Path(module.__file__).read_text()
    assert "psycopg" not in source and "import socket" not in source


def test_timers_are_refused_inside_workflows() -> None:
    @wf.workflow
    async def uses_asyncio_sleep() -> None:
        await asyncio.sleep(1)

    out = eng.Engine(RUN, uses_asyncio_sleep.fn, []).feed_all(start_of_run().events)
    assert isinstance(out, eng.Failed) and "durable sleep" in out.message


def test_serialisation_error_names_type_and_place() -> None:
    try:
        serde.dumps({"a": [1, object()]}, "the input of workflow X")
    except serde.SerializationError as exc:
        assert "object" in str(exc) and "the input of workflow X" in str(exc)
        assert ".a[1]" in str(exc)
    else:
        raise AssertionError("expected SerializationError")


def test_devalue_round_trip() -> None:
    value = {"a": [1, 2.5, None, True, "x"], "b": {"c": -3}, "big": 2**60}
    assert serde.parse(serde.stringify(value)) == value
    assert serde.stringify({"a": 1}) == '[{"a":1},1]'
