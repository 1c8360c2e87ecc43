"""WF136: hand a wfctl run that nothing drives to the workers of a queue.

The run's events are whole (every wfctl transition is one transaction); what it lacks is a
driver. So the repair writes no event: it makes the run claimable, as `wfctl run --detach` or
a worker's recovery would: a run in no queue gets its queue row (ready now, queue
`default`), an expired lease is cleared (ready now); either notifies the queue's idle
workers when the repair commits. A run ready in a queue no live worker serves needs a worker,
not a write: refused with what to start.
"""

from __future__ import annotations

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair

QUEUE = "default"


class HandToQueue(Repair):
    code = "WF136"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        rows = ctx.fetch("repair/wf136_queue_row")
        if not rows:
            return Action(
                row_changes=[("repair/wf136_enqueue", {"queue": QUEUE})],
                notes=[
                    f"the run goes to queue {QUEUE!r}: a `wfctl worker` serving its workflow "
                    "takes it"
                ],
            )
        row = rows[0]
        if row["lease_owner"] is not None and row["expired"]:
            return Action(
                row_changes=[("repair/wf136_expire", {})],
                notes=[
                    f"lease of {row['lease_owner']} cleared: ready now in queue {row['queue']!r}"
                ],
            )
        if row["lease_owner"] is not None:
            raise Refused(f"state moved: {row['lease_owner']} holds a live lease on the run")
        raise Refused(
            f"already ready in queue {row['queue']!r}: start a `wfctl worker` that serves "
            f"{ctx.run['name']} on that queue"
        )


REPAIR = HandToQueue()
