"""A web handler resuming a hook: an approval workflow and the HTTP endpoint that decides.

    wfctl run docs/examples/hook_handler.py:expense '["exp-7", 120]' --detach
    wfctl worker docs/examples/hook_handler.py
    python docs/examples/hook_handler.py 8080      # then:
    curl -X POST localhost:8080/expenses/exp-7/decision -d '{"approved": true}'

The workflow parks on a hook whose token the handler can compute (`expense-<id>`); the
handler resumes it, which records `hook_received` and wakes the run in the same transaction
(a worker picks it up at once through LISTEN/NOTIFY). The handler is plain WSGI (stdlib),
so it drops into any framework: the one line that matters is `resume(token, payload)`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

from wfctl.runtime import Workflows, create_hook, serde

wf = Workflows()


@wf.step
def pay_out(expense_id: str, amount: int) -> str:
    return f"paid {amount} for {expense_id}"


@wf.workflow
async def expense(expense_id: str, amount: int) -> dict[str, Any]:
    decision = await create_hook(token=f"expense-{expense_id}")
    if not decision.get("approved"):
        return {"expense": expense_id, "status": "rejected", "by": decision.get("by")}
    return {"expense": expense_id, "status": await pay_out(expense_id, amount)}


def resume(token: str, payload: Any, dsn: str | None = None) -> str:
    """Resume the hook holding `token` with `payload`; returns the run id it woke.
    LookupError when no active hook holds the token (the run is over, or never asked)."""
    from wfctl.runtime.executor import _default_connection
    from wfctl.runtime.store import Store

    with _default_connection(Workflows(dsn)) as conn:
        run_id, _hook = Store(conn).resume_hook(token, serde.dumps(payload, "a hook payload"))
    return run_id


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """POST /expenses/<id>/decision with a JSON body: 202 and the run id, 404 if no run waits."""
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
    except json.JSONDecodeError:
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [b"the body must be JSON\n"]
    except LookupError:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no run waits for this decision\n"]
    start_response("202 Accepted", [("Content-Type", "application/json")])
    return [json.dumps({"run_id": run_id}).encode()]


if __name__ == "__main__":
    from wsgiref.simple_server import make_server

    make_server("", int(sys.argv[1]) if len(sys.argv) > 1 else 8080, app).serve_forever()
