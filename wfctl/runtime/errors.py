"""Every error the runtime raises to Python code: one family, `WorkflowError`.

A caller waiting for a run (`RunHandle.result()`, `Client`) catches `WorkflowError` for
"the run did not give me its output", or one of its subclasses for why: it failed
(`RunFailedError`, with the stored `error_code` such as `USER_ERROR` or
`REPLAY_DIVERGENCE`), it was cancelled (`RunCancelledError`, with the reason), the wait timed
out (`RunTimeoutError`: the run itself goes on), or there is no such run (`RunNotFoundError`).

Workflow code meets the same family, so a saga written against `WorkflowError` compensates
whatever went wrong: a step that failed for good (`StepFailedError`), a stored value or a hook
payload that does not fit its annotation (`DecodeError`), a hook that timed out
(`HookTimeoutError`), a hook token held elsewhere (`HookConflictError`), a value that cannot
be stored (`SerializationError`), arguments that do not fit a signature (`ArgumentsError`),
an asyncio timer (`DeterminismError`). Only `asyncio.CancelledError` (a cancellation request)
is not one: it is asyncio's own.

Library errors speak the library: no CLI flag names. This module imports nothing of wfctl
(every runtime module may import it).
"""

from __future__ import annotations


class WorkflowError(Exception):
    """Base of every error the runtime raises about runs, hooks and workflow code."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunFailedError(WorkflowError):
    """The run ended `failed`: `error` is its stored message, `error_code` its code."""

    def __init__(self, run_id: str, error: str | None, error_code: str | None) -> None:
        code = f" ({error_code})" if error_code else ""
        text = error or "no error recorded"
        super().__init__(f"run {run_id} failed{code}: {text}", run_id=run_id)
        self.error = error
        self.error_code = error_code


class RunCancelledError(WorkflowError):
    """The run was cancelled (`wfctl runs cancel`, `Client.cancel`); `reason` is the
    recorded cancel reason (None when none was given)."""

    def __init__(self, run_id: str, reason: str | None = None) -> None:
        why = f": {reason}" if reason else ""
        super().__init__(f"run {run_id} was cancelled{why}", run_id=run_id)
        self.reason = reason


class RunTimeoutError(WorkflowError, TimeoutError):
    """Waiting for the run's end took longer than the timeout; the run itself goes on."""

    def __init__(self, run_id: str, timeout: float, status: str) -> None:
        super().__init__(
            f"run {run_id} still {status} after waiting {timeout:g}s (it goes on)", run_id=run_id
        )
        self.timeout = timeout
        self.status = status


class RunNotFoundError(WorkflowError, LookupError):
    """No run with this id in the database."""


class HookNotFoundError(WorkflowError, LookupError):
    """No active hook holds the token (never created, disposed, or its run ended) and the
    delivery was not kept for later (`Client.resume_hook(..., keep=...)`)."""


class RunEndedError(WorkflowError):
    """The hook's run has ended (`resume_hook` on a completed, failed or cancelled run):
    nothing was written. `status` is the run's status."""

    def __init__(self, token: str, run_id: str, status: str) -> None:
        super().__init__(f"hook {token!r}: run {run_id} is {status}", run_id=run_id)
        self.token = token
        self.status = status


class HookTimeoutError(WorkflowError, TimeoutError):
    """Inside a workflow: `await hook.wait(timeout=...)` reached its durable deadline before
    a payload arrived (the hook stays: a later payload is there for the next wait)."""

    def __init__(self, token: str, timeout: float) -> None:
        super().__init__(f"hook {token!r}: no payload within {timeout:g}s")
        self.token = token
        self.timeout = timeout


class HookConflictError(WorkflowError):
    """Inside a workflow: the hook's token is held by another active hook."""


class DecodeError(WorkflowError, TypeError):
    """A value that does not fit the annotation it is decoded to: a step's or workflow's
    stored argument or result, or a hook payload (`create_hook(payload_type=...)`). At
    `resume_hook` it is raised to the caller before anything is written."""


class DeterminismError(WorkflowError, RuntimeError):
    """Workflow code asked for something replay cannot reproduce (an asyncio timer:
    `asyncio.sleep(n > 0)`, `asyncio.wait_for`, `asyncio.timeout`)."""


class IdempotencyConflictError(WorkflowError):
    """An idempotency key reused with other arguments or another workflow: the existing
    run (`run_id`) was made for different input, so returning it would be a lie."""


class ConnectionError(WorkflowError, OSError):
    """The runtime could not reach or choose its database (no DSN found, refused, bad
    credentials). Also an `OSError`, as Python's own connection errors are."""


__all__ = [
    "ConnectionError",
    "DecodeError",
    "DeterminismError",
    "HookConflictError",
    "HookNotFoundError",
    "HookTimeoutError",
    "IdempotencyConflictError",
    "RunCancelledError",
    "RunEndedError",
    "RunFailedError",
    "RunNotFoundError",
    "RunTimeoutError",
    "WorkflowError",
]
