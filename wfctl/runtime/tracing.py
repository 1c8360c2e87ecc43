"""OpenTelemetry spans for runs and steps, where `opentelemetry` is installed.

Optional (`pip install 'wfctl[otel]'`): without the package every span is a no-op costing
one None check. With only the API installed and no SDK configured, OpenTelemetry's own
no-op tracer applies; an operator exports spans the usual way (`opentelemetry-instrument`,
or a TracerProvider set up before the worker starts).

Spans: `wfctl.run.drive` per drive of a run (attributes: run id, workflow, the status it
reached) and, inside it, `wfctl.step` per step attempt (step name, correlation id, attempt);
a step that raised carries the exception and an ERROR status.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import trace as _trace
except ImportError:  # the optional extra is not installed
    _trace = None  # type: ignore[assignment]

TRACER = "wfctl.runtime"


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span around the block (the current one becomes its parent), or nothing at all."""
    if _trace is None:
        yield None
        return
    tracer = _trace.get_tracer(TRACER)
    with tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def failed(current: Any, exc: BaseException) -> None:
    """Mark a span as failed by `exc` (a no-op without OpenTelemetry)."""
    if current is None or _trace is None:
        return
    current.record_exception(exc)
    current.set_status(_trace.Status(_trace.StatusCode.ERROR, str(exc)[:200]))
