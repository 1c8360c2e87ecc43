"""Stopping a write loop at a signal without losing what it wrote.

A KeyboardInterrupt raised in the middle of a COMMIT loses whether it committed; so while a
command writes in short transactions (a repair's runs, gc's batches) the first SIGINT or
SIGTERM only sets a flag: the transaction in flight commits or rolls back whole, nothing
starts after it, and the command reports exactly what was written. A second signal raises
KeyboardInterrupt at once (the transaction in flight rolls back). Outside the main thread
(an embedding application) signals are left alone.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def stop_on_signal(stop: threading.Event) -> Iterator[None]:
    """Within the block, the first SIGINT/SIGTERM sets `stop` (and says so on stderr)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        sys.stderr.write(
            "wfctl: stopping once the transaction in flight ends (signal again to roll it back)\n"
        )

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            if old is not None:
                signal.signal(sig, old)
