"""What a repair is: given a finding and the locked rows, the action that heals it.

A repair never decides whether to run: the runner has already re-verified the finding under
lock, checked the age gate and the queue. It reads the entity (locked on apply, plainly on a
dry run), and returns an `Action`: events to append through the shared EventWriter, job
actions, or a `Refused` with the reason.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.clock import timestamp
from wfctl.doctor import specs
from wfctl.doctor.base import Finding
from wfctl.world import codec
from wfctl.world.model import World
from wfctl.world.releases import Release
from wfctl.world.writer import EventWriter


class Refused(Exception):
    """This finding will not be repaired now; the message says why (shown and audited)."""


class Superseded(Refused):
    """Nothing left to do: an earlier repair of the same run, in the same transaction, already
    healed this finding (a slot-log rewrite heals WF121, WF122 and WF123 at once)."""


def shown(value: Any, limit: int = 80) -> str:
    """A payload value in a plan: JSON text (times in THE timestamp form, bytes described),
    whole up to `limit` characters; a longer one is cut and says its full length."""
    if isinstance(value, datetime):
        return json.dumps(timestamp(value))
    if isinstance(value, bytes | bytearray):
        return codec.describe(value, limit)

    def other(v: Any) -> Any:
        if isinstance(v, datetime):
            return timestamp(v)
        return codec.describe(v, 24) if isinstance(v, bytes | bytearray) else repr(v)

    text = json.dumps(value, default=other, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _params(params: dict[str, Any]) -> str:
    """A row change's parameters in a plan line: JSON values, never a Python repr."""
    return "{" + ", ".join(f"{k}: {shown(v)}" for k, v in params.items()) + "}"


@dataclass(frozen=True)
class NewEvent:
    """One event to append, with where it goes."""

    type: str
    correlation_id: str | None
    data: dict[str, Any] | None
    spec_version: int | None
    first_slot: bool = False  # a slot run's run_created at slot 1 (with its marker)
    # A position in a legacy run: strictly between two of its ids (None: before the second).
    between: tuple[str | None, str] | None = None
    created_at: datetime | None = None  # with `between`: between its neighbours' (replay clock)

    def summary(self) -> str:
        keys = ", ".join(f"{k}: {shown(v)}" for k, v in (self.data or {}).items())
        where = " at slot 1" if self.first_slot else ""
        if self.between is not None:
            before, after = self.between
            where = f" after {before} and before {after}" if before else f" before {after}"
        return f"{self.type}({self.correlation_id or '-'}){where} {{{keys}}}"


@dataclass
class Action:
    """Everything one repair writes, so a dry run can print it and an apply can do it."""

    events: list[NewEvent] = field(default_factory=list)
    marker: bool = False  # insert the run's slot marker
    fail_jobs: list[int] = field(default_factory=list)
    fail_message: str = "wfctl: superseded"  # last_error of the jobs it fails (starts "wfctl:")
    wake_up: bool = False  # enqueue one key-less {runId} wake-up job
    # Row changes, in order: (sql name, params); each statement must change exactly one row
    # and return it (else the state moved and the repair is refused). WF104's leftover rows,
    # the revival's re-minted id, deleted run_failed and reopened run.
    row_changes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rewrite: Rewrite | None = None  # a slot-log rewrite (--allow-rewrite), done first

    def describe(self) -> list[str]:
        out = self.rewrite.describe() if self.rewrite else []
        out += ["insert slot marker"] if self.marker else []
        out += [f"append {e.summary()}" for e in self.events]
        if self.fail_jobs:
            out.append(f"permanently fail jobs {self.fail_jobs}")
        out += [f"{n.rpartition('/')[2]} {_params(p)}" for n, p in self.row_changes]
        if self.wake_up:
            out.append("enqueue one {runId} wake-up job")
        return out + self.notes


@dataclass
class Context:
    """The repair transaction's view: connection, locking mode, world, writer, queue task."""

    conn: psycopg.Connection[Any]
    lock: bool  # False on a dry run: READ ONLY transactions may not lock rows
    world: World
    writer: EventWriter
    task: str
    run: dict[str, Any]
    allow_rewrite: bool = False  # --allow-rewrite: a repair may renumber the run's event ids
    rewritten: str = ""  # the code whose repair rewrote this run's log in this transaction

    def row(self, name: str, **params: Any) -> dict[str, Any]:
        """`repair/lock_<name>` on apply, `repair/read_<name>` on a dry run; Refused if gone."""
        query = sql.load(f"repair/{'lock' if self.lock else 'read'}_{name}")
        with self.conn.cursor(row_factory=dict_row) as cur:
            found = cur.execute(query, {"run_id": self.run["id"], **params}).fetchone()
        if found is None:
            raise Refused(f"state moved: the {name} row is gone")
        return found

    def fetch(self, name: str, **params: Any) -> list[dict[str, Any]]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql.load(name), {"run_id": self.run["id"], **params}).fetchall()

    def refuse_row_heal(self, code: str) -> None:
        """On a spec >= 9 run the log is authoritative: the package no longer gates writes on
        step/wait/hook rows, so a row "without its event" is not a wedge and appending the
        event would change history the runtime already folded. Refused, whatever found it."""
        spec = specs.parse(self.run.get("spec_version"))
        if code in specs.ROW_CHECKS and specs.log_authoritative(spec):
            raise Refused(f"spec {spec} run: its log is authoritative, rows are never healed")

    def run_spec_version(self) -> int | None:
        """The spec version the run's events carry (else the run's own), for appended events."""
        bounds = self.fetch("repair/run_event_bounds")[0]
        if bounds["spec_version"] is not None:
            return int(bounds["spec_version"])
        text = self.run.get("spec_version")
        return int(text) if isinstance(text, str) and text.isdigit() else None


def utc(value: datetime | None) -> datetime | None:
    """JS-written timestamp columns hold UTC wall time without a zone: attach it."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def for_release(action: Action, release: Release) -> Action:
    """The action's events in the world release's payload shapes: each carries the keys that
    release's replay reads, no more (4.1.x: step_completed only `result`, wait_completed no
    payload). Repairs build the fullest payload they can; this is where it is cut down."""
    if not action.events:
        return action
    events = [dataclasses.replace(e, data=release.shape(e.type, e.data)) for e in action.events]
    return dataclasses.replace(action, events=events)


class Rewrite(Protocol):
    """A repair step that rewrites a run's log (wfctl.repair.slotlog): describes itself for
    the plan and the audit, and applies itself inside the repair transaction."""

    def describe(self) -> list[str]: ...

    def apply(self, ctx: Context) -> list[str]: ...


class Repair:
    """Base: `code`, whether it rewrites history, and `plan(ctx, finding)`."""

    code: str = ""
    rewrites: bool = False  # needs --allow-rewrite

    def plan(self, ctx: Context, finding: Finding) -> Action:
        raise NotImplementedError
