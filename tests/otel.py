"""One in-memory span exporter per test process: OpenTelemetry lets a process set its
TracerProvider once, so every test module that reads spans shares this one."""

from __future__ import annotations

from typing import Any

_exporter: Any = None


def memory_exporter() -> Any:
    """The process's InMemorySpanExporter (installed with the first call)."""
    global _exporter
    if _exporter is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    return _exporter
