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

Spans: `wfctl.run.enqueue` where a run is created (`Client.enqueue`, `start()`; attributes:
`wfctl.workflow`, `wfctl.run_id`, `wfctl.queue`), `wfctl.run.drive` per drive of a run
(attributes: run id, `wfctl.workflow`, the status it reached) and, inside it, `wfctl.step` per
step attempt (step name, correlation id, attempt); a step that raised carries the exception
and an ERROR status.

From the request to the step: the W3C trace context current where a run is created (the
enqueue span's, else the caller's current span, else an explicit `traceparent=`) is stored
with the run, in its `executionContext.traceCarrier` (the key and shape `@workflow/core`
writes: `{"traceparent": ..., "tracestate": ...}`), and every drive of the run, in any
process, starts its span as a child of it: one trace holds request, enqueue, drives and steps.
A run the Node package created carries its carrier in the same place and is continued alike.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# opentelemetry.trace, imported at the first span question (not at import: it costs a CLI
# command that never traces, e.g. `wfctl runs show`, 50-200 ms); None when not installed.
_trace: Any = None
_loaded = False


def _api() -> Any:
    global _trace, _loaded
    if not _loaded:
        try:
            from opentelemetry import trace
        except ImportError:  # the optional extra is not installed
            trace = None  # type: ignore[assignment]
        _trace, _loaded = trace, True
    return _trace


TRACER = "wfctl.runtime"
CARRIER_KEY = "traceCarrier"  # executionContext's key, as @workflow/core names it
# W3C Trace Context, version 00 (a later version's first four fields read the same).
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@contextmanager
def span(name: str, *, parent: Any = None, **attributes: Any) -> Iterator[Any]:
    """A span around the block, or nothing at all. Its parent is the current span, or the
    context `parent` (from `parent_of`: a run's stored trace carrier)."""
    otel = _trace if _loaded else _api()
    if otel is None:
        yield None
        return
    provider = otel.get_tracer_provider()
    if isinstance(provider, otel.ProxyTracerProvider):
        yield None
        return
    tracer = provider.get_tracer(TRACER)
    with tracer.start_as_current_span(name, context=parent, attributes=attributes) as current:
        yield current


def traceparent_carrier(traceparent: str | None, tracestate: str | None) -> dict[str, str] | None:
    """An explicit W3C context as a carrier; None when absent or invalid (a vendor receiving
    an invalid `traceparent` ignores it and starts a new trace, W3C Trace Context §3.2)."""
    if not traceparent:
        return None
    found = _TRACEPARENT.match(traceparent.strip().lower())
    if found is None:
        return None
    version, trace_id, span_id, _flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest) or set(trace_id) == {"0"}:
        return None
    if set(span_id) == {"0"}:
        return None
    carrier = {"traceparent": traceparent.strip().lower()}
    if tracestate and tracestate.strip():
        carrier["tracestate"] = tracestate.strip()
    return carrier


def current_carrier() -> dict[str, str] | None:
    """The current span's context as a carrier (the global propagator's fields: W3C
    `traceparent`/`tracestate` by default), or None when no valid span is current."""
    otel = _trace if _loaded else _api()
    if otel is None or not otel.get_current_span().get_span_context().is_valid:
        return None
    from opentelemetry import propagate  # loads the propagators named by OTEL_PROPAGATORS

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier or None


class Enqueue:
    """What `enqueue` yields: the carrier to store with the run, and its span (or None)."""

    __slots__ = ("carrier", "span")

    def __init__(self, carrier: dict[str, str] | None, current: Any) -> None:
        self.carrier = carrier
        self.span = current

    def created(self, run_id: str) -> None:
        """Name the run on the enqueue span, once its id is known."""
        if self.span is not None:
            self.span.set_attribute("wfctl.run_id", run_id)


@contextmanager
def enqueue(
    workflow: str,
    *,
    traceparent: str | None = None,
    tracestate: str | None = None,
    queue: str | None = None,
) -> Iterator[Enqueue]:
    """Around a run's creation: a `wfctl.run.enqueue` span (when a TracerProvider is set; a
    child of the explicit `traceparent`, else of the current span) and the carrier to store
    with the run (that span's context; without a provider the caller's current span or the
    explicit context; None when there is neither)."""
    explicit = traceparent_carrier(traceparent, tracestate)
    if not enabled():
        yield Enqueue(explicit or current_carrier(), None)
        return
    parent = parent_of(explicit) if explicit is not None else None
    attributes: dict[str, Any] = {"wfctl.workflow": workflow}
    if queue is not None:
        attributes["wfctl.queue"] = queue
    with span("wfctl.run.enqueue", parent=parent, **attributes) as current:
        yield Enqueue(current_carrier(), current)


def parent_of(carrier: Any) -> Any:
    """The OpenTelemetry context a stored carrier names (None: no usable carrier)."""
    otel = _trace if _loaded else _api()
    if otel is None or not isinstance(carrier, dict) or not carrier:
        return None
    from opentelemetry import propagate

    fields = {str(k): str(v) for k, v in carrier.items() if isinstance(v, str)}
    context = propagate.extract(fields)
    if not otel.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def stored_carrier(conn: Any, run_id: str) -> dict[str, str] | None:
    """The trace carrier stored with a run (its `executionContext.traceCarrier`, written by
    wfctl or by the Node package), read only when spans are recorded (one query a drive)."""
    from wfctl import sql
    from wfctl.world import codec

    row = conn.execute(sql.load("runtime/trace_carrier"), {"run_id": run_id}).fetchone()
    if row is None:
        return None
    context = codec.decode(row[0]) if row[0] is not None else row[1]
    carrier = context.get(CARRIER_KEY) if isinstance(context, dict) else None
    return carrier if isinstance(carrier, dict) and carrier else None


def enabled() -> bool:
    """Whether `span` would start a span now (a TracerProvider is set). Lets the step
    path skip the context manager itself when it would be a no-op."""
    otel = _trace if _loaded else _api()
    return otel is not None and not isinstance(otel.get_tracer_provider(), otel.ProxyTracerProvider)


def failed(current: Any, exc: BaseException) -> None:
    """Mark a span as failed by `exc` (a no-op without OpenTelemetry)."""
    if current is None:
        return
    current.record_exception(exc)
    current.set_status(_trace.Status(_trace.StatusCode.ERROR, str(exc)[:200]))


def annotate(key: str, value: Any) -> None:
    """Set an attribute on the current span (the drive's), if one is recording."""
    otel = _trace if _loaded else _api()
    if otel is None:
        return
    current = otel.get_current_span()
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
