"""Which signals stop wfctl: SIGTERM always, SIGINT unless this process was started with it
ignored.

A non-interactive shell starts its background jobs (`wfctl worker ... &` in a script) with
SIGINT ignored, so that a Ctrl-C meant for the script's foreground does not stop them; Python
then leaves SIGINT ignored too (no KeyboardInterrupt). wfctl keeps it so for the process's
whole life, rather than ignoring it while starting and obeying it once a command installs its
own handler (the worker's, a repair apply's): every handler that takes SIGINT asks
`interruptible()` first. SIGTERM (`kill`, systemd, `timeout`) stops such a process as Ctrl-C
would stop another.
"""

from __future__ import annotations

import signal


def interruptible() -> tuple[signal.Signals, ...]:
    """(SIGINT,) when SIGINT may stop this process, () when it was inherited ignored."""
    return () if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else (signal.SIGINT,)
