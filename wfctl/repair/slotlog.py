"""Slot-log rewrites (`--allow-rewrite`): make a slot run's log one the package can read.

A slot-numbered run (slot era, beta.32+) must hold `evnt_` ids 1..n with `run_created` at
slot 1: the world's allocator reads the run's highest id (a `wevt_` id there makes every later
insert fail with 22P02), and a slot-aware runtime refuses any other id ("Event id is not
slot-numbered") and any gap. Appending cannot fix such a log; only renumbering can. This
module plans and applies that rewrite for WF121 (the restart shape: run row, `wevt_` events,
no marker, no run_created), WF122 (`wevt_` ids in a marked run) and WF123 (holes, a foreign
event at slot 1, non-slot `evnt_` bodies), one transaction per run, each one whole:

- order: `run_created` first (the existing one, or one rebuilt from the run row), then every
  other event in the order it was written: the `evnt_` events in slot order and the `wevt_`
  events in id order (the order a legacy reader replayed them), merged by `created_at`;
- ids only: an event keeps its type, correlation id, payload bytes (encrypted ones
  included), spec_version and created_at; only `id` moves (repair/park_event_ids);
- holes alone, in a run whose spec version is >= 7 (sealed log), are filled with `noop`
  events at the missing positions (no existing id changes); below spec 7 the reader does not
  know `noop`, so the run is renumbered densely instead;
- guards: the run row and its events locked (FOR UPDATE), the run's queue jobs held FOR
  UPDATE (graphile skips locked jobs) and a running one refused, and a final check that the
  run holds exactly the planned ids; any surprise undoes the rewrite (a savepoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wfctl import sql
from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair, Superseded
from wfctl.world import ids
from wfctl.world.queue_locks import GRAPHILE_LOCK_RESET
from wfctl.world.writer import PositionTaken

FILLER_TYPE = "noop"
PARK_PREFIX = "wfctl_park_"  # repair/place_event_ids strips exactly this prefix
SEALED_LOG_SPEC = 7  # spec 7: a position whose writer died holds a `noop`
SLOT_IDENTITY_SPEC = 6  # spec 6: the runtime reads the run's events as slots
REWRITE_HINT = "renumbers the run's event ids: rerun with --allow-rewrite (docs/checks.md)"


@dataclass(frozen=True)
class LogEvent:
    id: str
    type: str
    created_at: datetime


@dataclass(frozen=True)
class SlotPlan:
    """What a rewrite changes: id moves (old, new), `noop` fillers, a rebuilt run_created at
    slot 1, and the ids the run must hold afterwards (ascending)."""

    moves: tuple[tuple[str, str], ...]
    fillers: tuple[int, ...]
    run_created_at_one: bool
    final_ids: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.moves or self.fillers or self.run_created_at_one)


def plan_slot_log(
    events: Sequence[LogEvent], spec: int | None, rebuild_run_created: bool
) -> SlotPlan:
    """The rewrite that makes `events` (in id order) a dense slot log; see the module doc."""
    slotted = [(s, e) for e in events if (s := ids.event_slot(e.id)) is not None]
    others = [e for e in events if ids.event_slot(e.id) is None]
    first = slotted[0][1] if slotted else None
    healthy_start = rebuild_run_created is False and first is not None and slotted[0][0] == 1
    if not others and healthy_start and first is not None and first.type == "run_created":
        taken = {s for s, _ in slotted}
        holes = [n for n in range(1, slotted[-1][0] + 1) if n not in taken]
        if not holes:
            return SlotPlan((), (), False, tuple(e.id for e in events))
        if spec is not None and spec >= SEALED_LOG_SPEC:
            filled = sorted([e.id for e in events] + [ids.slot_event_id(n) for n in holes])
            return SlotPlan((), tuple(holes), False, tuple(filled))
    order = _replay_order(events, rebuild_run_created)
    offset = 2 if rebuild_run_created else 1
    moves = tuple(
        (e.id, ids.slot_event_id(n))
        for n, e in enumerate(order, start=offset)
        if e.id != ids.slot_event_id(n)
    )
    final = tuple(ids.slot_event_id(n) for n in range(1, len(order) + offset))
    return SlotPlan(moves, (), rebuild_run_created, final)


def _replay_order(events: Sequence[LogEvent], rebuild_run_created: bool) -> list[LogEvent]:
    """run_created first, then the slot events and the other events each in their own log
    order, merged by created_at (a slot event first on a tie: it was numbered by then)."""
    slotted = sorted(
        ((s, e) for e in events if (s := ids.event_slot(e.id)) is not None), key=lambda p: p[0]
    )
    slot_stream = [e for _, e in slotted]
    other_stream = sorted((e for e in events if ids.event_slot(e.id) is None), key=lambda e: e.id)
    head: list[LogEvent] = []
    if not rebuild_run_created:
        creation = next((e for e in slot_stream if e.type == "run_created"), None)
        creation = creation or next((e for e in other_stream if e.type == "run_created"), None)
        if creation is None:
            raise Refused("the run has no run_created event to put at slot 1")
        head = [creation]
        slot_stream = [e for e in slot_stream if e is not creation]
        other_stream = [e for e in other_stream if e is not creation]
    merged: list[LogEvent] = []
    i = j = 0
    while i < len(slot_stream) or j < len(other_stream):
        take_slot = j >= len(other_stream) or (
            i < len(slot_stream) and slot_stream[i].created_at <= other_stream[j].created_at
        )
        if take_slot:
            merged.append(slot_stream[i])
            i += 1
        else:
            merged.append(other_stream[j])
            j += 1
    return head + merged


def run_spec(ctx: Context) -> int | None:
    """The run's persisted spec version: the runtime reads the run's mode from it."""
    text = ctx.run.get("spec_version")
    return int(text) if isinstance(text, str) and text.isdigit() else None


def is_marked(ctx: Context) -> bool:
    return bool(ctx.fetch("writer/run_marker"))


def is_slot_run(ctx: Context, events: Sequence[LogEvent], marked: bool) -> bool:
    """The evidence rule (docs/checks.md, WF121): in a slot-era world a run is a slot run
    when it has a marker, any `evnt_` event, or a spec version >= 6 (the runtime reads such
    a run's events as slots whatever the world did); otherwise it is a legacy run."""
    spec = run_spec(ctx)
    return (
        marked
        or any(e.id.startswith(ids.SLOT_PREFIX) for e in events)
        or (spec is not None and spec >= SLOT_IDENTITY_SPEC)
    )


def read_events(ctx: Context) -> list[LogEvent]:
    """The run's events in id order, locked FOR UPDATE on apply."""
    rows = ctx.fetch(f"repair/{'lock' if ctx.lock else 'read'}_run_events")
    return [LogEvent(r["id"], r["type"], r["created_at"]) for r in rows]


def insert_marker(ctx: Context) -> None:
    """Mark the run as slot-numbered; with `seq_in_band` (0026) written as creation does."""
    has_seq = ctx.fetch("repair/marker_has_seq_in_band")[0]["has_seq_in_band"]
    name = "repair/insert_slot_marker_seq" if has_seq else "repair/insert_slot_marker"
    ctx.conn.execute(sql.load(name), {"run_id": ctx.run["id"]})


@dataclass(frozen=True)
class SlotRewrite:
    """One run's rewrite: the plan, plus the marker and run_created it restores."""

    code: str
    plan: SlotPlan
    marker: bool
    run_created: dict[str, Any] | None  # eventData of a rebuilt run_created (slot 1)
    spec: int | None

    def describe(self) -> list[str]:
        out = ["insert slot marker"] if self.marker else []
        out += [f"renumber {old} -> {new}" for old, new in self.plan.moves]
        if self.plan.run_created_at_one:
            out.append(f"insert run_created rebuilt from the run row at {ids.slot_event_id(1)}")
        out += [f"fill hole {ids.slot_event_id(n)} with {FILLER_TYPE}" for n in self.plan.fillers]
        return [*out, "guard: run's queue jobs held FOR UPDATE; refused while one is running"]

    def _move(self, ctx: Context) -> None:
        """Park the moves whose new id another event still holds, move the others directly,
        then place the parked ones (repair/move_event_ids); Refused if a row went missing."""
        held = {old for old, _ in self.plan.moves}
        parked = [(old, new) for old, new in self.plan.moves if new in held]
        direct = [(old, new) for old, new in self.plan.moves if new not in held]
        moved = 0
        for prefix, moves in ((PARK_PREFIX, parked), ("", direct)):
            if moves:
                params = {
                    "run_id": ctx.run["id"],
                    "prefix": prefix,
                    "old_ids": [old for old, _ in moves],
                    "new_ids": [new for _, new in moves],
                }
                rows = ctx.conn.execute(sql.load("repair/move_event_ids"), params).fetchall()
                moved += len(rows)
        if parked:
            placed = ctx.conn.execute(sql.load("repair/place_event_ids"), {"run_id": ctx.run["id"]})
            moved -= len(parked) - len(placed.fetchall())
        if moved != len(self.plan.moves):
            raise Refused("state moved: the run's events changed under the rewrite")

    def apply(self, ctx: Context) -> list[str]:
        """Write the rewrite in a savepoint; Refused (and nothing kept) on any surprise."""
        run_id = ctx.run["id"]
        written: list[str] = []
        with ctx.conn.transaction():
            if ctx.world.has_graphile:
                jobs = ctx.fetch(
                    "repair/hold_run_jobs", task=ctx.task, lock_reset=GRAPHILE_LOCK_RESET
                )
                running = [j for j in jobs if j["running"]]
                if running:
                    raise Refused(
                        f"queue job {running[0]['id']} of the run is running "
                        f"(locked by {running[0]['locked_by']}): a rewrite needs a quiet run"
                    )
            if self.marker:
                insert_marker(ctx)
            if self.plan.moves:
                self._move(ctx)
                written += [new for _, new in self.plan.moves]
            try:
                if self.plan.run_created_at_one:
                    event = ctx.writer.insert_at_slot(
                        ctx.conn, run_id, 1, "run_created", self.run_created, self.spec
                    )
                    written.append(event.id)
                for slot in self.plan.fillers:
                    event = ctx.writer.insert_at_slot(
                        ctx.conn, run_id, slot, FILLER_TYPE, None, self.spec
                    )
                    written.append(event.id)
            except PositionTaken as exc:
                raise Refused(f"state moved: {exc}") from None
            now = tuple(r["id"] for r in ctx.fetch("repair/read_run_events"))
            if now != self.plan.final_ids:
                raise Refused("state moved: an event was written to the run during the rewrite")
        ctx.rewritten = self.code
        return written


def plan(
    ctx: Context,
    code: str,
    *,
    run_created: dict[str, Any] | None = None,
) -> Action:
    """The slot-log rewrite for one run, as an Action (WF121 passes the rebuilt run_created
    eventData when the log has none). Refused without --allow-rewrite or for a legacy run;
    Superseded when an earlier finding of this run already rewrote it."""
    if ctx.rewritten:
        raise Superseded(f"healed by the {ctx.rewritten} rewrite of this run above")
    events = read_events(ctx)
    marked = is_marked(ctx)
    if not is_slot_run(ctx, events, marked):
        raise Refused("a legacy run (no marker, no evnt_ ids, spec < 6): nothing to renumber")
    spec = run_spec(ctx)
    slot_plan = plan_slot_log(events, spec, rebuild_run_created=run_created is not None)
    if slot_plan.empty and marked:
        raise Refused("state moved: the log is already dense and slot-numbered")
    if not slot_plan.empty and not ctx.allow_rewrite:  # a marker alone rewrites nothing
        raise Refused(REWRITE_HINT)
    if not ctx.lock:
        ctx.rewritten = code  # a dry run: the plan of the next finding assumes this one done
    return Action(rewrite=SlotRewrite(code, slot_plan, not marked, run_created, spec))


class SlotLogRepair(Repair):
    """WF122 and WF123: the finding names the symptom; the remedy is the same whole-log
    rewrite (WF121 builds on `plan` too, adding the run_created it rebuilds)."""

    rewrites = True

    def __init__(self, code: str) -> None:
        self.code = code

    def plan(self, ctx: Context, finding: Finding) -> Action:
        return plan(ctx, self.code)
