"""OpenTelemetry spans for runs and steps, where `opentelemetry` is installed.

Optional (`pip install 'wfctl[otel]'`): without the package every span is a no-op costing
one None check. With the API installed but no TracerProvider set (OpenTelemetry's proxy
provider, whose spans record nothing), no span is started either: starting one through the
proxy cost ~12-28 us per step, 5-10% of a worker's CPU per step, for nothing anyone could
read. An operator exports spans the usual way (`opentelemetry-instrument`, or a
TracerProvider set up before or while the worker runs: each span looks again).

`wfctl worker --otel` / `wfctl run --otel` set that provider up themselves (`export`): the
OpenTelemetry SDK, a resource named by OTEL_SERVICE_NAME (default `wfctl`), and the exporter
OTEL_TRACES_EXPORTER names (`otlp`, the default: OTLP over HTTP to
OTEL_EXPORTER_OTLP_ENDPOINT; `console`: JSON on stderr).

Spans: `wfctl.run.drive` per drive of a run (attributes: run id, `wfctl.workflow`, the status it
reached) and, inside it, `wfctl.step` per step attempt (step name, correlation id, attempt);
a step that raised carries the exception and an ERROR status.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
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
    provider = _trace.get_tracer_provider()
    if isinstance(provider, _trace.ProxyTracerProvider):
        yield None
        return
    tracer = provider.get_tracer(TRACER)
    with tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def enabled() -> bool:
    """Whether `span` would start a span now (a TracerProvider is set). Lets the step
    path skip the context manager itself when it would be a no-op."""
    return _trace is not None and not isinstance(
        _trace.get_tracer_provider(), _trace.ProxyTracerProvider
    )


def failed(current: Any, exc: BaseException) -> None:
    """Mark a span as failed by `exc` (a no-op without OpenTelemetry)."""
    if current is None or _trace is None:
        return
    current.record_exception(exc)
    current.set_status(_trace.Status(_trace.StatusCode.ERROR, str(exc)[:200]))


def annotate(key: str, value: Any) -> None:
    """Set an attribute on the current span (the drive's), if one is recording."""
    if _trace is None:
        return
    current = _trace.get_current_span()
    if current.is_recording():
        current.set_attribute(key, value)


def export(service: str = "wfctl") -> tuple[str, Callable[[], None]]:
    """Install an SDK TracerProvider with the exporter OTEL_TRACES_EXPORTER names (`otlp`
    by default, or `console`); returns its name and a shutdown function that flushes.
    ImportError when the SDK or the OTLP exporter is missing (`pip install 'wfctl[otel]'`)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    kind = (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")[0].strip().lower()
    processor: SpanProcessor
    if kind == "console":
        # One line per span, so it interleaves with --log-format json lines.
        processor = SimpleSpanProcessor(
            ConsoleSpanExporter(out=sys.stderr, formatter=lambda s: s.to_json(indent=None) + "\n")
        )
    elif kind == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )

        processor = BatchSpanProcessor(OTLPSpanExporter())
    else:
        raise ValueError(f"OTEL_TRACES_EXPORTER={kind!r}: wfctl exports to otlp or console")
    name = os.environ.get("OTEL_SERVICE_NAME") or service
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    return kind, provider.shutdown
