"""The errors a run's outcome reaches Python code with: one family, `WorkflowError`.

A caller waiting for a run (`RunHandle.result()`, `Client`) catches `WorkflowError` for
"the run did not give me its output", or one of its subclasses for why: it failed
(`RunFailedError`, with the stored `error_code` such as `USER_ERROR` or
`REPLAY_DIVERGENCE`), it was cancelled (`RunCancelledError`), the wait timed out
(`RunTimeoutError`: the run itself goes on), or there is no such run (`RunNotFoundError`).
A step that failed for good reaches the workflow body as `StepFailedError`, one too.
"""

from __future__ import annotations


class WorkflowError(Exception):
    """Base of every error about a run's outcome."""

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
    """The run was cancelled (`wfctl runs cancel`, `Client.cancel`)."""

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
    """No run with this id (or no active hook with this token) in the database."""


class HookNotFoundError(WorkflowError, LookupError):
    """No active hook holds the token (never created, disposed, or its run ended)."""


__all__ = [
    "HookNotFoundError",
    "RunCancelledError",
    "RunFailedError",
    "RunNotFoundError",
    "RunTimeoutError",
    "WorkflowError",
]
