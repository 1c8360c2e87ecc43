"""WF121: complete a half-created run: marker and/or run_created rebuilt from the run row.

In a slot-era world the evidence decides what the run was meant to be (slotlog.is_slot_run):
a slot run gets its marker and run_created at slot 1, its other events renumbered behind it
when it has any (--allow-rewrite); a legacy run gets run_created with a wevt_ id placed before
its first event, and no marker."""

from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair import placement, slotlog
from wfctl.repair.base import Action, Context, NewEvent, Refused, Repair
from wfctl.world import codec


class CompleteRunCreation(Repair):
    code = "WF121"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        run = ctx.run
        bounds = ctx.fetch("repair/run_event_bounds")[0]
        has_run_created = "no run_created" not in finding.detail
        data: dict[str, Any] = {
            "deploymentId": run["deployment_id"],
            "workflowName": run["name"],
            "input": codec.decode(run["input_cbor"]),
        }
        if run["execution_context_cbor"] is not None:
            data["executionContext"] = codec.decode(run["execution_context_cbor"])
        if run["attributes"]:
            data["attributes"] = run["attributes"]
        if run["encryption_public_key"]:
            data["encryptionPublicKey"] = run["encryption_public_key"]
        spec = int(run["spec_version"]) if str(run["spec_version"] or "").isdigit() else None
        event = NewEvent("run_created", None, data, spec)
        if ctx.world.has_event_slots:
            events = slotlog.read_events(ctx)
            marked = slotlog.is_marked(ctx)
            if slotlog.is_slot_run(ctx, events, marked):
                if not events:  # nothing to renumber: what the fixed world's creation writes
                    return Action(marker=not marked, events=[_first(event)])
                # The restart shape, or a marked run whose slot 1 went to another event.
                return slotlog.plan(ctx, self.code, run_created=None if has_run_created else data)
        if has_run_created:
            raise Refused("state moved: run_created exists now")
        first_id = bounds["first_id"]
        if first_id is None:
            return Action(events=[event])  # an empty legacy log: any fresh id is first
        # The log is read in id order: sort run_created before the first event.
        between = placement.legacy_between(ctx, None, first_id, "run_created goes first")
        return Action(events=[NewEvent("run_created", None, data, spec, between=between)])


def _first(event: NewEvent) -> NewEvent:
    return NewEvent(event.type, None, event.data, event.spec_version, first_slot=True)


REPAIR = CompleteRunCreation()
