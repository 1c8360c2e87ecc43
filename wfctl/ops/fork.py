"""Fork (rerun) a run: a new run with the source's input and a copy of its log up to a step.

What Temporal calls reset and DBOS fork. The new run gets the source's creation columns,
its run_created event, and (Python runtime, with `from_step`) the source's events before
that step's step_created, so the steps before it are replayed from the copy and the chosen
step and everything after it run again. It goes to the source's queue (DBOS's lesson: a
fork must not flood another queue): the Python worker queue the source used, or a graphile
job under the same job prefix for a Node run. All of it is ONE transaction, with an audit row.

Why correlation ids are rewritten: the Python runtime derives a run's correlation ids from
its run id and a counter (engine.correlation_ulid), so the fork's replay asks for
`step_<ulid(fork, k)>` where the source logged `step_<ulid(source, k)>`; the copy maps one
onto the other, counter by counter.

Limits (refused, never guessed):
- Node runs: a rerun from the start only. The Node runtime derives its correlation ids from
  its own seeded generator, which wfctl does not reproduce, so a copied prefix would diverge.
- hooks in the copied prefix (their tokens belong to the source);
- a step created before the cut whose end lies after it (parallel steps): pick another step.
- Workflow code that reads `random()` or branches on `now()` may take another path in the
  fork (seeded by the new run id; times are those of the copy).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from wfctl import sql
from wfctl.errors import RefusedError, UsageError, no_such_run
from wfctl.ops import audit, wakeup
from wfctl.runtime.engine import (
    PATCH_MARKER_PREFIX,
    Event,
    correlation_ulid,
    patch_marker_correlation,
)
from wfctl.runtime.store import DEPLOYMENT_ID, Store
from wfctl.world import ids
from wfctl.world.model import World
from wfctl.world.writer import NewEvent

COPYABLE = ("step_created", "step_started", "step_retrying", "step_completed", "step_failed",
            "wait_created", "wait_completed")  # fmt: skip
TERMINAL_STEP = ("step_completed", "step_failed")
FORKED_FROM = "wfctl.forkedFrom"  # the creation attribute naming a fork's source run


@dataclass
class ForkPlan:
    source_id: str
    run_id: str
    name: str
    runtime: str  # "python" | "node"
    from_step: str | None  # source step id the fork re-executes from (None: from the start)
    events: list[Event] = field(default_factory=list)  # the copied prefix (source ids)
    queue: str = ""  # python: worker queue; node: graphile task
    spec: int | None = None  # the source's spec_version, stamped on the copied events

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_run_id": self.source_id,
            "run_id": self.run_id,
            "workflow": self.name,
            "runtime": self.runtime,
            "from_step": self.from_step,
            "copied_events": len(self.events),
            "copied_steps": sum(1 for e in self.events if e.type == "step_created"),
            "queue": self.queue,
        }


def plan(
    store: Store,
    world: World,
    source_id: str,
    from_step: str | None,
    *,
    queue: str | None,
    job_prefix: str,
) -> ForkPlan:
    """Read the source and decide what the fork copies; refuse what it cannot copy."""
    run = store.read_run(source_id)
    if run is None:
        raise no_such_run(source_id)
    python = run.deployment_id == DEPLOYMENT_ID
    log = store.read_events(source_id)
    if not any(e.type == "run_created" for e in log):
        raise RefusedError(
            f"run {source_id} has no run_created event (WF121): nothing to fork from",
            hint="repair it first: wfctl repair --only WF121",
        )
    fork = ForkPlan(source_id, ids.prefixed("wrun"), run.name, "python" if python else "node", None)
    spec = str(run.spec_version or "")
    fork.spec = int(spec) if spec.isdigit() else None
    if from_step is not None:
        if not python:
            raise RefusedError(
                f"run {source_id} is a Node run: it can be rerun from the start only",
                hint="drop --from-step; the Node runtime's correlation ids cannot be reproduced",
            )
        fork.from_step, fork.events = _prefix(log, from_step)
    if python:
        if not store.queued:
            raise RefusedError(
                "this database has no worker queue to hand the fork to",
                hint="`wfctl worker` (or `wfctl bootstrap`) adds it in schema wfctl",
            )
        fork.queue = queue or _source_queue(store, source_id) or "default"
    else:
        if not world.has_graphile:
            raise RefusedError("a Node run's fork needs graphile_worker, which is not installed")
        fork.queue = f"{job_prefix}flows"
    return fork


def _prefix(log: list[Event], from_step: str) -> tuple[str, list[Event]]:
    """The events before the chosen step's step_created (step id, or 1-based step number)."""
    created = [e for e in log if e.type == "step_created"]
    if from_step.isdigit():
        n = int(from_step)
        if not 1 <= n <= len(created):
            raise UsageError(f"--from-step {n}: the run has {len(created)} steps")
        target = created[n - 1]
    else:
        found = [e for e in created if e.correlation_id == from_step]
        if not found:
            raise UsageError(f"--from-step {from_step}: no such step in the run")
        target = found[0]
    cut = log.index(target)
    prefix = [e for e in log[:cut] if not e.type.startswith("run_")]
    hooks = [e for e in prefix if e.type.startswith("hook_")]
    if hooks:
        raise RefusedError(
            f"the copied prefix holds hook events ({hooks[0].correlation_id}): hook tokens "
            "belong to the source run",
            hint="fork from a step before the hook was created",
        )
    other = [e for e in prefix if e.type not in COPYABLE]
    if other:
        raise RefusedError(f"the copied prefix holds a {other[0].type} event wfctl cannot copy")
    ended = {e.correlation_id for e in prefix if e.type in TERMINAL_STEP}
    open_steps = [e.correlation_id for e in prefix if e.type == "step_created"]
    unfinished = [s for s in open_steps if s not in ended]
    if unfinished:
        raise RefusedError(
            f"step {unfinished[0]} starts before the cut and ends after it (parallel steps)",
            hint="fork from an earlier step, or from the step that ends last",
        )
    return str(target.correlation_id), prefix


def _source_queue(store: Store, source_id: str) -> str | None:
    if not store.queued:
        return None
    row = store.conn.execute(sql.load("fork/source_queue"), {"run_id": source_id}).fetchone()
    return str(row[0]) if row else None


def apply(store: Store, world: World, fork: ForkPlan, reason: str) -> int:
    """Create the fork in one transaction; returns the audit row id."""
    conn = store.conn
    audit.require(conn)
    created = next(e for e in store.read_events(fork.source_id) if e.type == "run_created")
    # The fork's run_created names its source among the creation attributes, and the row holds
    # exactly those: the copied prefix holds no attr_set (COPYABLE), so row and log agree.
    data = dict(created.data or {})
    attributes = {**(data.get("attributes") or {}), FORKED_FROM: fork.source_id}
    data["attributes"] = attributes
    with conn.transaction():
        row = conn.execute(
            sql.load("fork/copy_run"),
            {
                "run_id": fork.run_id,
                "source_id": fork.source_id,
                "attributes": json.dumps(attributes),
            },
        ).fetchone()
        if row is None:
            raise RefusedError(f"run {fork.source_id} vanished meanwhile")
        first = [NewEvent("run_created", None, data, fork.spec)]
        if world.has_event_slots:
            conn.execute(sql.load("runtime/insert_marker"), {"run_id": fork.run_id})
            batch = store.writer.append_batch(
                conn, fork.run_id, first, scheme="slot", first_slot=True
            )
        else:
            batch = store.writer.append_batch(conn, fork.run_id, first, scheme="legacy")
        copied = _copy_prefix(store, fork, batch.result()[0].id)
        if fork.runtime == "python":
            store.enqueue(fork.run_id, fork.name, fork.queue)
        else:
            _node_job(conn, world, fork)
        return audit.record(
            conn,
            action="fork",
            run_id=fork.run_id,
            reason=reason,
            details={**fork.as_dict(), "copied": copied},
        )


def _copy_prefix(store: Store, fork: ForkPlan, floor: str) -> dict[str, str]:
    """Append the prefix under the fork's correlation ids, with its step and wait rows."""
    if not fork.events:
        return {}
    mapping = _correlation_map(fork)
    conn = store.conn
    spec = fork.spec
    events = [NewEvent(e.type, mapping[str(e.correlation_id)], e.data, spec) for e in fork.events]
    scheme = store.scheme(fork.run_id)
    store.writer.append_batch(conn, fork.run_id, events, scheme=scheme, floor=floor).result()
    for e in fork.events:
        new = mapping[str(e.correlation_id)]
        if e.type == "step_created":
            conn.execute(
                sql.load("fork/copy_step"),
                {"run_id": fork.run_id, "step_id": new, "source_step_id": e.correlation_id},
            )
        elif e.type == "wait_created":
            resume = e.data.get("resumeAt") if isinstance(e.data, dict) else None
            conn.execute(
                sql.load("runtime/insert_wait"),
                {
                    "wait_id": ids.wait_row_key(fork.run_id, new),
                    "run_id": fork.run_id,
                    "resume_at": _utc_naive(resume),
                    "spec_version": spec,
                },
            )
        elif e.type == "wait_completed":
            conn.execute(
                sql.load("fork/complete_wait_row"),
                {"wait_id": ids.wait_row_key(fork.run_id, new)},
            )
    return mapping


def _correlation_map(fork: ForkPlan) -> dict[str, str]:
    """source correlation id -> fork correlation id, by the runtime's per-run counter."""
    wanted = {str(e.correlation_id) for e in fork.events}
    bodies = {c.partition("_")[2]: c for c in wanted}
    mapping: dict[str, str] = {}
    for e in fork.events:  # patched() markers: ids from (run, change id), not the counter
        name = (e.data or {}).get("stepName")
        if e.type == "step_created" and isinstance(name, str):
            change = name.removeprefix(PATCH_MARKER_PREFIX)
            source = patch_marker_correlation(fork.source_id, change) if change != name else ""
            if source in wanted:
                mapping[source] = patch_marker_correlation(fork.run_id, change)
    if len(mapping) == len(wanted):
        return mapping
    for k in range(1, 4 * len(fork.events) + 16):
        body = correlation_ulid(fork.source_id, k)
        if body in bodies:
            source = bodies[body]
            mapping[source] = f"{source.partition('_')[0]}_{correlation_ulid(fork.run_id, k)}"
            if len(mapping) == len(wanted):
                return mapping
    missing = sorted(wanted - set(mapping))
    raise RefusedError(
        f"correlation id {missing[0]} was not minted by the Python runtime for this run",
        hint="only runs the wfctl runtime wrote can be forked from a step",
    )


def _utc_naive(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _node_job(conn: psycopg.Connection[Any], world: World, fork: ForkPlan) -> None:
    """One wake-up job in the package's own format, under the source's job prefix."""
    wakeup.add_job(conn, fork.queue, fork.run_id, fork.name, 49 if world.has_event_slots else 3)
