"""Write worlds through the REAL @workflow/world-postgres 5.0.0-beta.29 write path.

Why: a `wfctl doctor` check is only worth something if it recognises state exactly as the
package leaves it, torn writes included. So tests do not INSERT rows themselves; they send
events to the package's own `world.events.create` (and `world.queue`) via a small Node
driver (`tests/node/driver.mjs`), and produce torn writes by failing or delaying one of the
package's statements with a trigger (`tests/faults.py`).

Shape of the API:
- event builders (`run_created`, `step_created`, ...) return one *operation* dict each,
  already bound to a run id, so a whole scenario (even several runs) is one list;
- `RealWorld.ops(list)` runs the list in ONE node process (a node start costs ~0.3 s) and
  returns one result dict per operation: `{"ok": True, "result": {...}}` or
  `{"ok": False, "error": "<ErrorClass>", "message": ..., "cause"?: {...}}`;
- scenario builders (`*_ops`) return `(run_id, ops)` for the clean-world controls.

Payload bytes are the runtime's own format (`devl` + devalue text, e.g. `b"devl[1]"`) and
travel as `{"$bytes": base64}` (a Uint8Array in JS); datetimes as `{"$date": iso}`.
Ids are `<prefix>_<ULID>`; the world refuses a run id whose ULID time is >24 h old or >5 min
ahead, so ids are minted now (`new_run_id()`).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.conftest import install_real_package, psycopg_to_url
from wfctl.world.ids import prefixed

DRIVER = Path(__file__).resolve().parent / "node" / "driver.mjs"
READER = Path(__file__).resolve().parent / "node" / "reader.mjs"
WORKFLOW = "workflow//./src/wf//main"
STEP = "step//./src/wf//work"
QUEUE_PREFIX = "__wkf_workflow_"

Op = dict[str, Any]


class DriverError(RuntimeError):
    """The driver process itself failed (not an operation: those are reported per line)."""


# --- values -------------------------------------------------------------------------------


def jbytes(data: bytes) -> dict[str, str]:
    """A payload for the driver: becomes a JS Uint8Array."""
    return {"$bytes": base64.b64encode(data).decode("ascii")}


def jdate(when: datetime) -> dict[str, str]:
    """A datetime for the driver: becomes a JS Date (naive values are taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return {"$date": when.astimezone(UTC).isoformat().replace("+00:00", "Z")}


def devl(text: str) -> bytes:
    """A runtime payload in the `devl` format (4-byte prefix + devalue text)."""
    return b"devl" + text.encode()


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_run_id() -> str:
    return prefixed("wrun")


def new_step_id() -> str:
    return prefixed("step")


def new_wait_id() -> str:
    return prefixed("wait")


def new_hook_id() -> str:
    return prefixed("hook")


# --- operations -----------------------------------------------------------------------------


def create(
    run_id: str,
    event_type: str,
    correlation_id: str | None = None,
    event_data: dict[str, Any] | None = None,
    spec_version: int | None = None,
) -> Op:
    """A raw `world.events.create(run_id, {...})` operation."""
    event: dict[str, Any] = {"eventType": event_type}
    if correlation_id is not None:
        event["correlationId"] = correlation_id
    if event_data is not None:
        event["eventData"] = event_data
    if spec_version is not None:
        event["specVersion"] = spec_version
    return {"op": "create", "runId": run_id, "event": event}


def queue(workflow_name: str, message: dict[str, Any], opts: dict[str, Any] | None = None) -> Op:
    """`world.queue('__wkf_workflow_<name>', message, opts)`: one graphile job."""
    op: Op = {"op": "queue", "queueName": QUEUE_PREFIX + workflow_name, "message": message}
    if opts is not None:
        op["opts"] = opts
    return op


def sleep(ms: int) -> Op:
    return {"op": "sleep", "ms": ms}


# --- event builders (beta.29 eventData shapes, reference §3.2) -----------------------------


def run_created(
    run_id: str,
    workflow_name: str = WORKFLOW,
    input_bytes: bytes = b"devl[]",
    deployment_id: str = "postgres",
    **extra: Any,
) -> Op:
    data = {"deploymentId": deployment_id, "workflowName": workflow_name}
    return create(run_id, "run_created", None, {**data, "input": jbytes(input_bytes), **extra})


def run_started(run_id: str, resilient: dict[str, Any] | None = None) -> Op:
    """Plain start; `resilient={deploymentId, workflowName, input}` creates a missing run."""
    return create(run_id, "run_started", None, resilient)


def run_completed(run_id: str, output_bytes: bytes = b"devl[null]") -> Op:
    return create(run_id, "run_completed", None, {"output": jbytes(output_bytes)})


def run_failed(
    run_id: str, error_bytes: bytes = b'devl["boom"]', error_code: str | None = "USER_ERROR"
) -> Op:
    data: dict[str, Any] = {"error": jbytes(error_bytes)}
    if error_code is not None:
        data["errorCode"] = error_code
    return create(run_id, "run_failed", None, data)


def run_cancelled(run_id: str, reason: str | None = None) -> Op:
    return create(run_id, "run_cancelled", None, {"cancelReason": reason} if reason else None)


def step_created(
    run_id: str, step_id: str, step_name: str = STEP, input_bytes: bytes = b"devl[[],{}]"
) -> Op:
    data = {"stepName": step_name, "input": jbytes(input_bytes)}
    return create(run_id, "step_created", step_id, data)


def step_started(run_id: str, step_id: str, attempt: int | None = None) -> Op:
    """Plain start of an existing step (one transaction in beta.29)."""
    return create(run_id, "step_started", step_id, {"attempt": attempt} if attempt else None)


def step_started_lazy(
    run_id: str, step_id: str, step_name: str = STEP, input_bytes: bytes = b"devl[[],{}]"
) -> Op:
    """Lazy start: creates the step + a synthetic `step_created` + starts it, atomically."""
    data = {"stepName": step_name, "input": jbytes(input_bytes)}
    return create(run_id, "step_started", step_id, data)


def step_completed(
    run_id: str, step_id: str, step_name: str = STEP, result_bytes: bytes = b"devl[1]"
) -> Op:
    data = {"stepName": step_name, "result": jbytes(result_bytes)}
    return create(run_id, "step_completed", step_id, data)


def step_failed(
    run_id: str, step_id: str, step_name: str = STEP, error_bytes: bytes = b'devl["boom"]'
) -> Op:
    data = {"stepName": step_name, "error": jbytes(error_bytes)}
    return create(run_id, "step_failed", step_id, data)


def step_retrying(
    run_id: str,
    step_id: str,
    error_bytes: bytes = b'devl["retry"]',
    retry_after: datetime | None = None,
    step_name: str = STEP,
) -> Op:
    data: dict[str, Any] = {"stepName": step_name, "error": jbytes(error_bytes)}
    if retry_after is not None:
        data["retryAfter"] = jdate(retry_after)
    return create(run_id, "step_retrying", step_id, data)


def wait_created(run_id: str, corr_id: str, resume_at: datetime) -> Op:
    return create(run_id, "wait_created", corr_id, {"resumeAt": jdate(resume_at)})


def wait_completed(run_id: str, corr_id: str, resume_at: datetime | None = None) -> Op:
    """The runtime copies `resumeAt` from the wait_created event; None omits it."""
    data = None if resume_at is None else {"resumeAt": jdate(resume_at)}
    return create(run_id, "wait_completed", corr_id, data)


def hook_created(
    run_id: str,
    hook_id: str,
    token: str,
    metadata_bytes: bytes | None = None,
    is_webhook: bool = False,
) -> Op:
    data: dict[str, Any] = {"token": token, "isWebhook": is_webhook}
    if metadata_bytes is not None:
        data["metadata"] = jbytes(metadata_bytes)
    return create(run_id, "hook_created", hook_id, data)


def hook_received(
    run_id: str, hook_id: str, payload_bytes: bytes = b"devl[1]", token: str | None = None
) -> Op:
    data: dict[str, Any] = {"payload": jbytes(payload_bytes)}
    if token is not None:
        data["token"] = token
    return create(run_id, "hook_received", hook_id, data)


def hook_disposed(run_id: str, hook_id: str, token: str | None = None) -> Op:
    return create(run_id, "hook_disposed", hook_id, {"token": token} if token else None)


# --- scenario builders: (run_id, ops) for clean-world controls -------------------------------


def new_run_ops(
    workflow_name: str = WORKFLOW, input_bytes: bytes = b"devl[]", start: bool = True
) -> tuple[str, list[Op]]:
    run_id = new_run_id()
    ops = [run_created(run_id, workflow_name, input_bytes)]
    if start:
        ops.append(run_started(run_id))
    return run_id, ops


def step_ops(run_id: str, step_id: str | None = None, lazy: bool = False) -> list[Op]:
    """One step created, started and completed (`lazy`: the runtime's inline path)."""
    step_id = step_id or new_step_id()
    first = (
        [step_started_lazy(run_id, step_id)]
        if lazy
        else [step_created(run_id, step_id), step_started(run_id, step_id)]
    )
    return [*first, step_completed(run_id, step_id, result_bytes=b"devl[1]")]


def completed_run_ops(n_steps: int = 2, lazy: bool = False) -> tuple[str, list[Op]]:
    """A run with `n_steps` completed steps, then `run_completed` (waits/hooks deleted)."""
    run_id, ops = new_run_ops()
    for _ in range(n_steps):
        ops += step_ops(run_id, lazy=lazy)
    ops.append(run_completed(run_id))
    return run_id, ops


def running_with_completed_step_ops() -> tuple[str, list[Op]]:
    """A running run whose one step completed (the replay that follows has not run yet)."""
    run_id, ops = new_run_ops()
    return run_id, ops + step_ops(run_id)


def sleeping_run_ops(resume_in: timedelta = timedelta(hours=1)) -> tuple[str, list[Op]]:
    """A running run parked on a wait that resumes in the future."""
    run_id, ops = new_run_ops()
    ops += step_ops(run_id)
    ops.append(wait_created(run_id, new_wait_id(), utcnow() + resume_in))
    return run_id, ops


def hook_waiting_run_ops(token: str | None = None) -> tuple[str, list[Op]]:
    """A running run waiting on a hook (no job: it waits for a resume)."""
    run_id, ops = new_run_ops()
    hook_id = new_hook_id()
    ops.append(hook_created(run_id, hook_id, token or f"tok-{hook_id[-12:]}"))
    return run_id, ops


def clean_world_ops() -> tuple[dict[str, str], list[Op]]:
    """All false-positive controls at once: {label: run_id} and one op list."""
    runs: dict[str, str] = {}
    ops: list[Op] = []
    for label, build in (
        ("completed", completed_run_ops),
        ("running_step_completed", running_with_completed_step_ops),
        ("sleeping", sleeping_run_ops),
        ("hook_waiting", hook_waiting_run_ops),
    ):
        run_id, run_ops = build()
        runs[label] = run_id
        ops += run_ops
    return runs, ops


# --- the driver -----------------------------------------------------------------------------


class RealWorld:
    """The real package, pointed at one database (a libpq conninfo or URL)."""

    def __init__(self, dsn: str, timeout: float = 120.0, folder: Path | None = None) -> None:
        """`folder`: another installed package to drive (conftest.install_release_package,
        a 4.x release); by default the beta.29 package."""
        self.dsn = dsn
        self.url = dsn if "://" in dsn else psycopg_to_url(dsn)
        self.timeout = timeout
        self.folder = folder or install_real_package()

    def _env(self) -> dict[str, str]:
        env = {**os.environ, "WORKFLOW_POSTGRES_URL": self.url}
        env.pop("DATABASE_URL", None)
        env.pop("PORT", None)
        return env

    def spawn(self, ops: Iterable[Op]) -> subprocess.Popen[str]:
        """Start the driver without waiting (for crash-in-the-window tests); see `collect`."""
        proc = subprocess.Popen(
            ["node", str(DRIVER)],
            cwd=self.folder,
            env=self._env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(list(ops)))
        proc.stdin.close()
        proc.stdin = None  # so that communicate() does not flush the closed pipe
        return proc

    def collect(self, proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
        """The result lines a spawned driver printed (all of them if it exited normally)."""
        out, err = proc.communicate(timeout=self.timeout)
        return _results(out, err, proc.returncode, expected=None)

    def ops(self, ops: Iterable[Op]) -> list[dict[str, Any]]:
        """Run the operations in order in one node process; one result per operation."""
        ops = list(ops)
        if not ops:
            return []
        proc = subprocess.run(
            ["node", str(DRIVER)],
            cwd=self.folder,
            env=self._env(),
            input=json.dumps(ops),
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )
        return _results(proc.stdout, proc.stderr, proc.returncode, expected=len(ops))

    def ok(self, ops: Iterable[Op]) -> list[dict[str, Any]]:
        """Like `ops`, but every operation must succeed; returns the `result` summaries."""
        ops = list(ops)
        results = self.ops(ops)
        failed = [(op, r) for op, r in zip(ops, results, strict=True) if not r["ok"]]
        if failed:
            raise AssertionError(f"operations failed: {failed}")
        return [r["result"] for r in results]

    def create(self, op: Op) -> dict[str, Any]:
        """One operation; its result line."""
        return self.ops([op])[0]

    # Scenario helpers (each one node process).

    def new_run(
        self, workflow_name: str = WORKFLOW, input_bytes: bytes = b"devl[]", start: bool = True
    ) -> str:
        run_id, ops = new_run_ops(workflow_name, input_bytes, start)
        self.ok(ops)
        return run_id

    def complete_run_with_steps(self, n: int = 2, lazy: bool = False) -> str:
        run_id, ops = completed_run_ops(n, lazy)
        self.ok(ops)
        return run_id

    def clean_world(self) -> dict[str, str]:
        """The four false-positive controls; {label: run_id}."""
        runs, ops = clean_world_ops()
        self.ok(ops)
        return runs


def read_back(
    dsn: str, run_ids: list[str], folder: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Read runs back through the package's own read path (`tests/node/reader.mjs`:
    runs.get, events.list, steps/hooks, zod-validated): {run_id: its result line}.
    `folder`: an npm folder holding another release's package (default: beta.29's)."""
    folder = folder if folder is not None else install_real_package()
    env = {**os.environ, "WORKFLOW_POSTGRES_URL": psycopg_to_url(dsn)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        ["node", str(READER)],
        cwd=folder,
        env=env,
        input=json.dumps(run_ids),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise DriverError(f"reader exited {done.returncode}: {done.stderr[-4000:]}")
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith('{"ok":')]
    return {r["runId"]: r for r in lines}


def _results(out: str, err: str, code: int | None, expected: int | None) -> list[dict[str, Any]]:
    results = [json.loads(line) for line in out.splitlines() if line.startswith('{"ok":')]
    if expected is not None and (code != 0 or len(results) != expected):
        raise DriverError(
            f"driver exited {code} with {len(results)}/{expected} results\n"
            f"stdout:\n{out[-4000:]}\nstderr:\n{err[-4000:]}"
        )
    return results
