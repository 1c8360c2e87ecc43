"""wfctl's durable workflow runtime: Python workflows on the world schema.

Every state transition is one transaction (entity row and its event together), written
through the shared event writer; see docs/runtime.md.
"""

from wfctl.runtime.api import (
    FatalError,
    Hook,
    HookConflictError,
    RetryableError,
    RunHandle,
    SerializationError,
    StepFailedError,
    Workflows,
    create_hook,
    now,
    random,
    sleep,
    start,
)

__all__ = [
    "FatalError",
    "Hook",
    "HookConflictError",
    "RetryableError",
    "RunHandle",
    "SerializationError",
    "StepFailedError",
    "Workflows",
    "create_hook",
    "now",
    "random",
    "sleep",
    "start",
]
