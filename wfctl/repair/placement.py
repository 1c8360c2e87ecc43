"""Where a restored terminal event goes, so that every runtime's replay consumes it.

Replay reads a run's log strictly in id order: core beta.39's EventsConsumer offers the current
event to the consumers the workflow code has subscribed so far and stops the run ("Replay could
not consume event") when none takes it; wfctl's engine fails it with REPLAY_DIVERGENCE the same
way. A lost step or wait completion restored at the tail is therefore wrong when an entity was
created after the completion happened: the code that created it may have run because the
result was known, and a replay that meets that creation before the completion stops there.

So a restored terminal event is placed before the first creation event written at or after the
entity's completion time (sql/repair/terminal_position.sql), when no other entity's outcome
sorts between: with one there (a wait_completed the code raced the step against, say), the
creation may follow from that outcome instead, a replay may take either branch, and the repair
refuses rather than guess. A legacy run is read in `wevt_`
ULID order, so an id between the two neighbours is minted (with a created_at between theirs:
the replay clock reads it). A slot-numbered run can only append: the repair refuses instead.
Without such a creation event the tail is right, as before: nothing later can depend on it.

A restored creation event (step_created, wait_created, hook_created) may sit among its entity's
events (both runtimes accept that), but not after the entity's terminal event (step_completed,
step_failed, wait_completed, hook_disposed): the consumer has finished there. Then it goes just
before the entity's first event (legacy runs), or the repair refuses (slot runs).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from wfctl.repair.base import Context, NewEvent, Refused
from wfctl.world import ids


def place_terminal(
    ctx: Context, event: NewEvent, done_at: datetime | None
) -> tuple[NewEvent, list[str]]:
    """`event` positioned for a replay to consume it, and a note saying where; or Refused."""
    if done_at is None or event.correlation_id is None:
        return event, []
    row = ctx.fetch(
        "repair/terminal_position", correlation_id=event.correlation_id, done_at=done_at
    )[0]
    if row["dependent_id"] is None:
        return event, []
    dependent = f"{row['dependent_type']}({row['dependent_correlation_id']}) {row['dependent_id']}"
    why = (
        f"{dependent} was written after the lost {event.type} and may depend on it: "
        "appended after it, the replay would stop at it"
    )
    if row["resolved_between"]:
        raise Refused(
            f"{why}; but {row['resolved_between']} other outcome(s) (a step's, a wait's, a "
            "hook's) sort between, and the code may have gone on because of one of those (a "
            "race): no position is right for every replay; see --explain WF111"
        )
    between = legacy_between(ctx, row["previous_id"], row["dependent_id"], why)
    placed = dataclasses.replace(event, between=between, created_at=row["placed_at"])
    return placed, [f"placed before {dependent} (written after the completion), not appended"]


def place_creation(ctx: Context, event: NewEvent) -> tuple[NewEvent, list[str]]:
    """A restored creation event: at the tail unless its entity has already ended; then just
    before the entity's first event (legacy runs), or Refused (slot runs)."""
    if event.correlation_id is None:
        return event, []
    row = ctx.fetch("repair/entity_first_event", correlation_id=event.correlation_id)[0]
    if not row["has_terminal"]:
        return event, []
    first = row["first_id"]
    why = (
        f"the entity's log already ends (terminal event after {first}): a {event.type} after "
        "it would be offered to no consumer"
    )
    between = legacy_between(ctx, row["previous_id"], first, why)
    placed = dataclasses.replace(event, between=between, created_at=row["first_created_at"])
    return placed, [f"placed before the entity's first event {first}, not appended"]


def legacy_between(
    ctx: Context, before: str | None, after: str, why: str
) -> tuple[str | None, str]:
    """Two ids of a legacy run with a free `wevt_` id strictly between (the writer draws it:
    ids.legacy_id_between); else Refused. `before` None: the position before `after`."""
    scheme = ctx.writer.scheme(ctx.conn, ctx.run["id"], lock=ctx.lock)
    if scheme != "legacy":
        raise Refused(
            f"{why}; a slot-numbered run can only append (renumbering, --allow-rewrite, is not "
            "available in this version)"
        )
    if not ids.is_legacy_event_id(after) or not (before is None or ids.is_legacy_event_id(before)):
        raise Refused(f"{why}; its neighbours {before}, {after} are not wevt_ ULID ids")
    try:
        ids.legacy_gap(before, after)
    except ValueError as exc:
        raise Refused(f"{why}; {exc}") from None
    return before, after
