"""WF141, opt-in (--allow-revive): revive a run the runtime failed because a late step_started
sorts after its step's terminal event.

A clock-skewed peer that re-ran a live step minted its step_started id on a clock ahead, so the
start sorts after the step's completion; core beta.39's step consumer has finished there and
the replay fails the run (REPLAY_DIVERGENCE, then CORRUPTED_EVENT_LOG), although the step
completed. Re-minting the id alone is not enough once the run has failed: its run_failed event
and its failed status must be undone too (beta29-fault-behaviour). This is a rewrite of
history, hence opt-in, and refused unless the run is exactly that case:
- the run is failed with a replay failure code, its one terminal event a run_failed;
- its log's only unconsumable part is ONE late step_started (no duplicate completions);
- nothing else sorts after the run_failed; no hook was open when it failed (the failure
  deleted its row and freed its token: another run may hold it now);
- the run numbers its events with wevt_ ids (a slot run cannot be reordered).
One guarded transaction (the runner's): re-mint the start just before the step's terminal
event, delete the run_failed, reopen the run, restore the rows of waits open at the failure
(from their wait_created, exact resumeAt), enqueue a wake-up, audit.
"""

from datetime import UTC, datetime
from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair
from wfctl.repair.placement import legacy_between
from wfctl.world import codec, ids

# What the runtime writes when it cannot replay a log (core beta.39 classifyRunError).
REPLAY_FAILURES = ("CORRUPTED_EVENT_LOG", "REPLAY_DIVERGENCE")
LATE_START = "step_started after the step's terminal event"


class ReviveLateStepStart(Repair):
    code = "WF141"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        run = ctx.run
        if run["status"] != "failed" or run["error_code"] not in REPLAY_FAILURES:
            raise Refused(
                f"the run is {run['status']} ({run['error_code'] or 'no error code'}): revival "
                f"applies only to a run failed by its replay ({', '.join(REPLAY_FAILURES)})"
            )
        if finding.detail != LATE_START:
            raise Refused(f"the log holds {finding.detail!r}: revival only moves a late start")
        shape = ctx.fetch("repair/revival_shape")[0]
        late: list[dict[str, Any]] = shape["late_starts"]
        ends: list[dict[str, Any]] = shape["run_terminals"]
        if len(late) != 1 or late[0]["step_id"] != finding.entity_id:
            raise Refused(f"{len(late)} late step_started events in the run: revival moves one")
        if [e["type"] for e in ends] != ["run_failed"]:
            kinds = ", ".join(e["type"] for e in ends) or "none"
            raise Refused(f"the run's terminal events are [{kinds}], not one run_failed")
        if shape["after_failure"]:
            raise Refused(f"{shape['after_failure']} event(s) sort after the run_failed")
        if shape["open_hooks"]:
            raise Refused(
                f"{shape['open_hooks']} hook(s) were open when the run failed: the failure "
                "deleted their rows and freed their tokens (another run may hold them now)"
            )
        start = late[0]
        why = f"the late step_started {start['id']} must sort before {start['terminal_id']}"
        # A random id in the gap, not its edge: the package mints +1 within a millisecond.
        new_id = ids.legacy_id_between(
            *legacy_between(ctx, start["before_terminal"], start["terminal_id"], why)
        )
        return Action(
            row_changes=[
                (
                    "repair/remint_event",
                    {"old_id": start["id"], "new_id": new_id, "type": "step_started"},
                ),
                ("repair/delete_run_failed", {"event_id": ends[0]["id"]}),
                ("repair/reopen_failed_run", {"error_code": run["error_code"]}),
                *_restored_waits(ctx),
            ],
            wake_up=ctx.world.has_graphile,
            notes=[]
            if ctx.world.has_graphile
            else ["no graphile queue: nothing wakes the run until a worker picks it up"],
        )


def _restored_waits(ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    """Rows for the waits open when the run failed (its end deleted them)."""
    out = []
    for wait in ctx.fetch("repair/open_waits"):
        if wait["has_row"]:
            continue
        data = codec.decode(wait["payload_cbor"]) if wait["payload_cbor"] is not None else None
        resume_at = data.get("resumeAt") if isinstance(data, dict) else None
        if not isinstance(resume_at, datetime):
            raise Refused(f"wait {wait['correlation_id']}: its wait_created has no resumeAt")
        params = {
            "correlation_id": wait["correlation_id"],
            "resume_at": resume_at.astimezone(UTC).replace(tzinfo=None),
            "spec_version": wait["spec_version"],
        }
        out.append(("repair/restore_wait_row", params))
    return out


REPAIR = ReviveLateStepStart()
