"""Replay recorded runs against the current code, writing nothing (`wfctl runs replay`,
`wfctl.testing.replay`): the check to run in CI before a deploy.

A run's log is read in one READ ONLY transaction and fed to the pure engine with the
workflow given (no step body runs: steps are answered from the log). The verdict:

- `replayed`: every event of the log is one the code asks for, in order; for a finished run,
  the code also ends the run as the log does (completed with an equal result, or failed
  with the same error code); a run still in flight may go on as the code now says;
- `diverged`: the code asks for something else at some event (the engine names it), or it
  would end the run differently (another result, a failure, or more steps where the log
  completed it);
- `error`: the run cannot be replayed here (unknown id, another workflow, an unreadable
  payload).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from wfctl.runtime import engine as eng
from wfctl.runtime import serde
from wfctl.runtime.registry import WorkflowDef, Workflows
from wfctl.runtime.store import Store

TERMINAL_EVENTS = ("run_completed", "run_failed", "run_cancelled")


@dataclass
class ReplayResult:
    """One run's verdict (see the module docstring)."""

    run_id: str
    verdict: str  # replayed | diverged | error
    workflow: str | None = None
    status: str | None = None
    events: int = 0
    event_id: str | None = None  # the first diverging event, when the engine names one
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == "replayed"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class NondeterminismError(AssertionError):
    """A run does not replay against the current code (`wfctl.testing.replay`)."""

    def __init__(self, result: ReplayResult) -> None:
        where = f" at {result.event_id}" if result.event_id else ""
        super().__init__(f"run {result.run_id} {result.verdict}{where}: {result.message}")
        self.result = result


def replay_runs(
    conn: psycopg.Connection[Any],
    run_ids: list[str],
    against: WorkflowDef | Workflows,
) -> list[ReplayResult]:
    """Replay each run in one READ ONLY transaction on `conn` (autocommit); nothing is
    written, whatever the code does."""
    conn.execute("BEGIN READ ONLY")
    try:
        store = Store(conn)
        return [replay_one(store, run_id, against) for run_id in run_ids]
    finally:
        conn.execute("ROLLBACK")


def replay_one(store: Store, run_id: str, against: WorkflowDef | Workflows) -> ReplayResult:
    row = store.read_run(run_id)
    if row is None:
        return ReplayResult(run_id, "error", message="no such run")
    result = ReplayResult(run_id, "error", row.name, row.status)
    wdef = _workflow(against, row.name)
    if wdef is None:
        result.message = f"run is workflow {row.name}, not {_describe(against)}"
        return result
    events = store.read_events(run_id)
    result.events = len(events)
    terminal = events[-1] if events and events[-1].type in TERMINAL_EVENTS else None
    body = events[:-1] if terminal is not None else events
    try:
        args = serde.loads(row.input) or []
    except ValueError as exc:
        result.message = f"input unreadable: {exc}"
        return result
    engine = eng.Engine(run_id, wdef.entry, list(args))
    engine.history = events  # patched(): the log goes on to its terminal event
    try:
        outcome = engine.feed_all(body)
        return _judge(result, outcome, terminal)
    except Exception as exc:  # a payload the engine cannot open, a bug in the code's setup
        result.message = f"{type(exc).__name__}: {exc}"
        return result
    finally:
        engine.close()


def _judge(result: ReplayResult, outcome: eng.Outcome, terminal: eng.Event | None) -> ReplayResult:
    def diverged(message: str, event_id: str | None = None) -> ReplayResult:
        result.verdict, result.message, result.event_id = "diverged", message, event_id
        return result

    if isinstance(outcome, eng.Diverged):
        return diverged(outcome.message, outcome.event_id)
    if terminal is None or terminal.type == "run_cancelled":
        result.verdict = "replayed"
        return result
    data = terminal.data or {}
    if terminal.type == "run_completed":
        if isinstance(outcome, eng.Completed):
            recorded, now = serde.loads(data.get("output")), serde.loads(outcome.output)
            if recorded != now:
                return diverged(
                    f"the code returns {_short(now)} where the log completed with "
                    f"{_short(recorded)}",
                    terminal.id,
                )
            result.verdict = "replayed"
            return result
        return diverged(f"the log completed the run where the code {_doing(outcome)}", terminal.id)
    # run_failed
    code = data.get("errorCode")
    if isinstance(outcome, eng.Failed) and outcome.code == code:
        result.verdict = "replayed"
        return result
    return diverged(
        f"the log failed the run ({code}) where the code {_doing(outcome)}", terminal.id
    )


def _doing(outcome: eng.Outcome) -> str:
    if isinstance(outcome, eng.Pending):
        asks = [type(c).__name__ for c in outcome.commands]
        names = [eng.short_name(c.step_name) for c in outcome.commands if hasattr(c, "step_name")]
        what = ", ".join(names) if names else ", ".join(asks) or "nothing"
        return f"goes on ({what})"
    if isinstance(outcome, eng.Completed):
        return f"completes with {_short(serde.loads(outcome.output))}"
    if isinstance(outcome, eng.Failed):
        return f"fails ({outcome.code}: {outcome.message})"
    return type(outcome).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _workflow(against: WorkflowDef | Workflows, name: str) -> WorkflowDef | None:
    if isinstance(against, Workflows):
        return against.by_name(name)
    if name == against.name or name in against.aliases:
        return against
    return None


def _describe(against: WorkflowDef | Workflows) -> str:
    if isinstance(against, Workflows):
        return "any workflow of the registry given"
    return against.name
