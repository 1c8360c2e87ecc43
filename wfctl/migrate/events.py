"""How the migrate domain reports while it works: a small interface the command layer renders.

`wfctl.migrate` never prints. It tells a `Reporter` what it does (`say`, one plain line) and
how far a concurrent index build is (`progress`); `wfctl.cli` decides how that looks (a bar
on a terminal, throttled lines in a log, nothing in a test).
"""

from __future__ import annotations

from typing import Protocol


class Reporter(Protocol):
    def say(self, text: str) -> None:
        """One plain line of what is happening (no markup)."""

    def progress(self, label: str, phase: str, fraction: float | None, detail: str) -> None:
        """The current phase of a long build: `fraction` 0..1, or None when unknown."""

    def progress_done(self, label: str) -> None:
        """The build named `label` has ended (successfully or not)."""


class Silent:
    """A reporter that keeps every line (for tests and library callers); shows nothing."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.phases: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text)

    def progress(self, label: str, phase: str, fraction: float | None, detail: str) -> None:
        if not self.phases or self.phases[-1] != phase:
            self.phases.append(phase)

    def progress_done(self, label: str) -> None:
        return None
