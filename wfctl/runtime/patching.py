"""Safe code changes: `patched("change-id")` (docs/runtime.md, "Changing workflow code").

A run records that it took a change's new path with a **marker**: a tiny built-in step named
`step//py:wfctl.patched//<change-id>`, written like any step (step row, `step_created` +
`step_started` with the next transition, `step_completed` with the one after), so the
world stays consistent for `doctor` and the Node package reads the run like any other.

`patched(id)` answers, deterministically on every replay:
- True if the run's log holds the change's marker (the run took the new path before);
- False if the workflow is still replaying the log (the call is reached at a point the run
  passed under code without the change: it must keep the old path);
- True, and records the marker, when the workflow reaches the call fresh (past the log).

A marker's correlation id is derived from the run id and the change id, not from the
counter every step/wait/hook id comes from, so asking (or no longer asking) `patched()`
shifts no other id: once no run from before a change is in flight, the `patched()` call
and the old branch can simply be deleted (a marker the code no longer asks about is
skipped on replay).
"""

from __future__ import annotations

from wfctl.runtime import engine

MARKER_PREFIX = engine.PATCH_MARKER_PREFIX
marker_name = engine.patch_marker_name  # validates the change id
marker_correlation = engine.patch_marker_correlation


def is_marker(step_name: object) -> bool:
    return isinstance(step_name, str) and step_name.startswith(MARKER_PREFIX)


def marker_body() -> None:
    """The marker step's body: nothing to do, its completion is the record."""
    return None
