"""`--log-format json`: the messages of the long-running commands (`wfctl worker`, `wfctl run`)
as one JSON object per line on stderr, through the standard `logging` module (logger `wfctl`),
for log shippers (Loki, CloudWatch, Datadog) that index fields instead of grepping text.

Each record carries `timestamp` (ISO 8601, UTC), `level`, `logger`, `message`, the fields the
command adds (a worker's `worker_id` and `queue`), and `run_id` when the message names a run.
Built on python-json-logger. Text (the default) stays the plain lines it always was.

The user's own `logging` (steps, workflows, the libraries they call) goes through the root
logger: `user_logging` gives it a stderr handler in the same format, at `--log-level` (default
INFO), unless the user's code configured the root logger itself (then its handlers and level
stay, and only gain the run's fields). Records logged inside a run carry `run_id`,
`workflow`, `step`, `step_id` and `attempt` (runtime/context.py: LogContext).
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

LOGGER = "wfctl"
_RUN_ID = re.compile(r"\bwrun_[0-9A-Z]{26}\b")


class _Fields(logging.Filter):
    """Adds the command's fixed fields, and the run id a message names."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__()
        self.fields = fields

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in self.fields.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        if not hasattr(record, "run_id"):
            found = _RUN_ID.search(record.getMessage())
            if found:
                record.run_id = found.group(0)
        return True


def json_logger(verbose: int, **fields: Any) -> logging.Logger:
    """The `wfctl` logger writing JSON lines to stderr (DEBUG with -v, else INFO)."""
    logger = logging.getLogger(LOGGER)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_json_formatter())
    handler.addFilter(_Fields(fields))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    return logger


class _UserText(logging.Formatter):
    """`LEVEL logger: message [run R workflow W step S attempt N]`: the user's records in
    text, with the run they were logged in."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{record.levelname} {record.name}: {record.getMessage()}"
        run_id = getattr(record, "run_id", None)
        if run_id:
            where = f"run {run_id} workflow {getattr(record, 'workflow', '?')}"
            step = getattr(record, "step", None)
            if step:
                where += f" step {step} attempt {getattr(record, 'attempt', '?')}"
            line += f" [{where}]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _json_formatter() -> logging.Formatter:
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "{levelname}{name}{message}",
        style="{",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp=True,
    )


_QUIET = ("alembic", "sqlalchemy")


def user_logging(log_format: str, level: str, **fields: Any) -> None:
    """Route the user's `logging` (root logger) to stderr in `log_format` at `level`, unless
    the user's code configured the root logger itself; either way its handlers add the run's
    fields (context.LogContext). In JSON, wfctl's handler adds the command's fixed `fields`
    too (a worker's `queue`, then its `worker_id`: `add_fields(logging.getLogger(), ...)`).
    Call after importing the user's module."""
    from wfctl.errors import UsageError
    from wfctl.runtime.context import LogContext

    wanted = logging.getLevelName(level.upper())
    if not isinstance(wanted, int):
        raise UsageError(f"--log-level: expected DEBUG, INFO, WARNING or ERROR, got {level!r}")
    root = logging.getLogger()
    for name in _QUIET:  # wfctl's own machinery (bootstrap's migrations) says nothing at INFO
        quiet = logging.getLogger(name)
        if quiet.level == logging.NOTSET:
            quiet.setLevel(logging.WARNING)
    if not root.handlers:
        ours = logging.StreamHandler(sys.stderr)
        ours.setFormatter(_json_formatter() if log_format == "json" else _UserText())
        if log_format == "json":
            ours.addFilter(_Fields(dict(fields)))
        root.addHandler(ours)
        root.setLevel(wanted)
    for handler in root.handlers:
        if not any(isinstance(f, LogContext) for f in handler.filters):
            handler.addFilter(LogContext())


LOG_FORMAT_HELP = "text (plain lines) or json (one JSON object per line, through logging)."
LOG_LEVEL_HELP = (
    "The level of your code's `logging` (root logger; DEBUG, INFO, WARNING, ERROR), unless "
    "your code configures logging itself. Records logged in a run carry its run id, "
    "workflow, step and attempt."
)
OTEL_HELP = (
    "Export OpenTelemetry spans (a span per drive with the workflow name, one per step "
    "attempt): OTEL_TRACES_EXPORTER otlp (default; OTEL_EXPORTER_OTLP_ENDPOINT) or console."
)


def setup(st: Any, log_format: str, otel: bool, **fields: Any) -> Any:
    """Apply `--log-format` and `--otel` for a long-running command; returns the function
    that flushes the spans at exit (a no-op without --otel)."""
    from wfctl.errors import UsageError

    if log_format not in ("text", "json"):
        raise UsageError(f"--log-format: expected text or json, got {log_format!r}")
    if log_format == "json":
        st.output.logger = json_logger(st.output.verbose, **fields)
    if not otel:
        return lambda: None
    from wfctl.runtime import tracing

    try:
        kind, shutdown = tracing.export()
    except ImportError as exc:
        raise UsageError(
            f"--otel needs the OpenTelemetry SDK and exporter: {exc}",
            hint="pip install 'wfctl[otel]'",
        ) from None
    except ValueError as exc:
        raise UsageError(f"--otel: {exc}") from None
    st.output.debug(f"wfctl: exporting spans ({kind})")
    return shutdown


def add_fields(logger: logging.Logger | None, **fields: Any) -> None:
    """Add fixed fields to every later record of a JSON logger (a worker's id, once known)."""
    if logger is None:
        return
    for handler in logger.handlers:
        for filt in handler.filters:
            if isinstance(filt, _Fields):
                filt.fields.update(fields)


def render(logger: logging.Logger | None, message: str) -> str:
    """`message` as the logger would write it, for a signal handler, which prints instead of
    logging (a handler's lock may be held by the thread the signal interrupted)."""
    if logger is None or not logger.handlers:
        return message
    handler = logger.handlers[0]
    record = logger.makeRecord(logger.name, logging.INFO, "", 0, message, (), None)
    handler.filter(record)
    return handler.format(record)
