"""Child workflows: `child = await start_child(workflow, *args)`, then `await child`.

Durable on both sides, in the world's own entities:

- **Creation** is a step of the parent (`step//wfctl//start_child`): its `step_created` (input
  `{workflow, args, queue}`), `step_started` and `step_completed` (result: the child's run id)
  are written in ONE transaction with the child's run row, slot marker, `run_created` and
  queue row, and with the parent's hook below. So a child exists exactly when its parent's log
  says so: a crash before the commit leaves neither, after it both; a replay never creates a
  second child (the completed step returns the recorded run id). The child's attributes carry
  `wfctl.parentRunId` and `wfctl.parentHook`; its idempotency key is the parent run + the
  call's position (the step's correlation id, deterministic per run).
- **Waiting** is a hook of the parent with the token `wfctl:child:<parent run>:<step id>`,
  created in that same transaction; `await child` awaits its payload. The parent's worker
  releases the run (parked on a hook) like any hook wait.
- **The child's end** is delivered as `hook_received {runId, status, output | error,
  errorCode}` on that hook, with a queue wake-up of the parent, in a transaction of its own
  right after the child's terminal transaction, by whoever drove the child to its end
  (`deliver`). A crash between the two, or a child cancelled from outside, is caught by every
  worker's heartbeat (`reconcile`, single-flight with lease recovery): it finds the child
  hooks without a payload whose child has ended and delivers them. Delivery is once per hook
  (checked under the parent's row lock).

Children are driven by `wfctl worker`s of their queue (default `default`), like `run --detach`.
"""

from __future__ import annotations

from typing import Any

from wfctl import sql
from wfctl.runtime import engine as eng
from wfctl.runtime import serde
from wfctl.runtime.errors import WorkflowError
from wfctl.runtime.store import TERMINAL, RunRow, Store, Tx
from wfctl.world import codec, ids

PARENT_RUN = "wfctl.parentRunId"
PARENT_HOOK = "wfctl.parentHook"
RECONCILE_BATCH = 100


def queue_start(tx: Tx, cmd: eng.StartChild) -> str:
    """Queue the child's creation and the parent's record of it in the parent's transaction;
    returns the child's run id (minted now: only a committed transaction makes it exist)."""
    child_id = ids.prefixed("wrun")
    attributes = {
        PARENT_RUN: tx.run_id,
        PARENT_HOOK: cmd.hook_token,
        "wfctl.idempotencyKey": cmd.hook_token,
    }
    tx.create_child_run(child_id, cmd.workflow_name, cmd.input, attributes, cmd.queue)
    tx.start_new_step(cmd.correlation_id, eng.CHILD_STEP, cmd.record)
    tx.complete_step(cmd.correlation_id, eng.CHILD_STEP, serde.dumps(child_id, "a child run id"))
    return child_id


def end_payload(row: RunRow) -> bytes:
    """What the parent's hook receives when the child ends."""
    value: dict[str, Any] = {"runId": row.id, "status": row.status}
    if row.status == "completed":
        value["output"] = serde.loads(row.output)
    if row.error is not None:
        try:
            value["error"] = serde.error_message(serde.loads(row.error))
        except (serde.PayloadUnreadable, ValueError) as exc:
            value["error"] = str(exc)
    if row.error_code:
        value["errorCode"] = row.error_code
    return serde.dumps(value, "a child's end")


def deliver(store: Store, row: RunRow) -> str | None:
    """Deliver an ended child's outcome to its parent (once); the parent's run id, or None."""
    token = (row.attributes or {}).get(PARENT_HOOK)
    if not token or row.status not in TERMINAL:
        return None
    return store.deliver_hook_once(str(token), end_payload(row))


def waiting_for(store: Store, run_id: str) -> list[str]:
    """The run ids of the children `run_id` waits for (no end delivered yet), oldest first."""
    rows = store.conn.execute(
        sql.load("runtime/run_children_waiting"), {"run_id": run_id}
    ).fetchall()
    found = []
    for (output_cbor,) in rows:
        try:
            child_id = serde.loads(codec.decode(output_cbor))
        except (ValueError, serde.PayloadUnreadable):
            continue
        if isinstance(child_id, str):
            found.append(child_id)
    return found


def reconcile(store: Store) -> int:
    """Deliver the ends of children whose delivery was lost; how many were delivered."""
    rows = store.conn.execute(
        sql.load("runtime/child_hooks_undelivered"), {"limit": RECONCILE_BATCH}
    ).fetchall()
    delivered = 0
    for _hook_id, _run_id, _token, output_cbor in rows:
        try:
            child_id = serde.loads(codec.decode(output_cbor))
        except (ValueError, serde.PayloadUnreadable):
            continue
        if not isinstance(child_id, str):
            continue
        child = store.read_run(child_id)
        if child is not None and child.status in TERMINAL and deliver(store, child):
            delivered += 1
    return delivered


class ChildWorkflowError(WorkflowError):
    """A child run ended failed or cancelled (raised by `await child` in the parent)."""

    def __init__(self, run_id: str, status: str, error: str | None, code: str | None) -> None:
        super().__init__(
            f"child run {run_id} {status}" + (f": {error}" if error else ""), run_id=run_id
        )
        self.status = status
        self.error = error
        self.error_code = code
