"""A web handler resuming a hook: an approval workflow and the HTTP endpoint that decides.

    wfctl run docs/examples/hook_handler.py:expense '["exp-7", 120]' --detach
    wfctl worker docs/examples/hook_handler.py
    python docs/examples/hook_handler.py 8080      # then:
    curl -X POST localhost:8080/expenses/exp-7/decision -d '{"approved": true, "by": "kim"}'

The workflow parks on a typed hook whose token the handler can compute (`expense-<id>`) and
gives up after a day (`hook.wait(timeout=...)`, durable). The handler resumes it through the
public `Client`: the payload is validated against `Decision` first (a malformed body is a
400 and nothing is written), then `hook_received` is recorded and the run woken in one
transaction (a worker picks it up at once through LISTEN/NOTIFY). A decision that arrives
before the run reached its hook is kept (an hour by default) and handed over when it does.
The handler is plain WSGI (stdlib), so it drops into any framework.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from wfctl.runtime import (
    Client,
    DecodeError,
    HookNotFoundError,
    HookTimeoutError,
    RunEndedError,
    Workflows,
    create_hook,
)

wf = Workflows()


@dataclass
class Decision:
    approved: bool
    by: str = "someone"


@wf.step
def pay_out(expense_id: str, amount: int) -> str:
    return f"paid {amount} for {expense_id}"


@wf.workflow
async def expense(expense_id: str, amount: int) -> dict[str, str]:
    hook = create_hook(token=f"expense-{expense_id}", payload_type=Decision)
    try:
        decision: Decision = await hook.wait(timeout=timedelta(days=1))
    except HookTimeoutError:
        return {"expense": expense_id, "status": "expired"}
    if not decision.approved:
        return {"expense": expense_id, "status": "rejected", "by": decision.by}
    return {"expense": expense_id, "status": await pay_out(expense_id, amount)}


def resume(token: str, payload: Any) -> str | None:
    """Resume the hook holding `token` with `payload` through the public client: the run id
    it woke, or None when the decision is kept for a run still on its way. (A real service
    keeps one `Client` per process; the DSN comes from WFCTL_DATABASE_URL, DATABASE_URL...)"""
    with Client() as client:
        return client.resume_hook(token, payload)


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """POST /expenses/<id>/decision with a JSON body: 202 and the run id (null: kept for
    later), 400 for a body that is not a `Decision`, 409 when the run has ended."""
    parts = environ.get("PATH_INFO", "").strip("/").split("/")
    if (
        environ["REQUEST_METHOD"] != "POST"
        or len(parts) != 3
        or parts[::2] != ["expenses", "decision"]
    ):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    size = int(environ.get("CONTENT_LENGTH") or 0)
    try:
        payload = json.loads(environ["wsgi.input"].read(size) or b"{}")
        run_id = resume(f"expense-{parts[1]}", payload)
    except (json.JSONDecodeError, DecodeError) as exc:
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [f"not a decision: {exc}\n".encode()]
    except RunEndedError:
        start_response("409 Conflict", [("Content-Type", "text/plain")])
        return [b"this expense was already decided\n"]
    except HookNotFoundError:  # only with keep=False
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no run waits for this decision\n"]
    start_response("202 Accepted", [("Content-Type", "application/json")])
    return [json.dumps({"run_id": run_id}).encode()]


if __name__ == "__main__":
    from wsgiref.simple_server import make_server

    make_server("", int(sys.argv[1]) if len(sys.argv) > 1 else 8080, app).serve_forever()
