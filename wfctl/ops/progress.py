"""Progress of long operator work on stderr, throttled so cron logs stay readable.

A line at most every `interval` seconds (2 s on a terminal, 30 s otherwise) and one at the
end; stdout stays reserved for the result.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class Throttled:
    """Call `emit(text)` for a progress line, no more often than the interval allows."""

    def __init__(self, emit: Callable[[str], None], interval: float | None = None) -> None:
        self.emit = emit
        self.interval = interval if interval is not None else (2.0 if sys.stderr.isatty() else 30)
        self._last = time.monotonic()

    def __call__(self, text: str, *, final: bool = False) -> None:
        now = time.monotonic()
        if final or now - self._last >= self.interval:
            self._last = now
            self.emit(text)
