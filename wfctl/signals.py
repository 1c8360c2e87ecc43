"""Which signals stop wfctl, and stopping a write loop at one without losing what it wrote.

SIGTERM always stops wfctl; SIGINT does unless the process was started with it ignored. A
non-interactive shell starts its background jobs (`wfctl worker ... &` in a script) with
SIGINT ignored, so that a Ctrl-C meant for the script's foreground does not stop them, and
Python then leaves SIGINT ignored too (no KeyboardInterrupt). wfctl keeps it so for the
process's whole life, rather than ignoring it while starting and obeying it once a command
installs its own handler (the worker's, a repair's or gc's apply): every handler that takes
SIGINT asks `interruptible()` first. SIGTERM (`kill`, systemd, `timeout`) stops such a
process as Ctrl-C would stop another.

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


def interruptible() -> tuple[signal.Signals, ...]:
    """(SIGINT,) when SIGINT may stop this process, () when it was inherited ignored."""
    return () if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else (signal.SIGINT,)


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

    previous = {sig: signal.signal(sig, handler) for sig in (*interruptible(), signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            if old is not None:
                signal.signal(sig, old)
