"""Retry delays: exponential backoff with jitter, capped.

A step that raises (anything but `FatalError`) is retried within its `max_retries`. Retry n
(n = the attempt that failed, 1-based) waits

    min(max_backoff, backoff * 2**(n-1)) * uniform(1 - jitter, 1)

so by default (backoff 1 s, max_backoff 60 s, jitter 0.5) a dead dependency sees attempts at
about 0.5-1 s, 1-2 s, 2-4 s apart, never more than a minute apart, and several runs that failed
together do not retry in lockstep. `backoff=0` retries at once (the behaviour before).
`RetryableError(retry_after=...)` overrides the delay of that one retry.

The delay is recorded, not slept: the executor writes `step_retrying {retryAfter}` and the
step row's `retry_after` in the failure's transaction, so a restarted driver (or another
worker) honours it. Computed only when a step fails: no cost on the step path.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DEFAULT_BACKOFF = 1.0  # seconds before the first retry (before jitter)
DEFAULT_MAX_BACKOFF = 60.0  # the cap on any one delay (before jitter)
DEFAULT_JITTER = 0.5  # a delay is drawn from [d * (1 - jitter), d]

_rng = random.SystemRandom()


@dataclass(frozen=True)
class RetryPolicy:
    """How a step's failed attempts are spaced (seconds)."""

    backoff: float = DEFAULT_BACKOFF
    max_backoff: float = DEFAULT_MAX_BACKOFF
    jitter: float = DEFAULT_JITTER

    def __post_init__(self) -> None:
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoff and max_backoff must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def ceiling(self, attempt: int) -> float:
        """The delay before jitter after failed attempt `attempt` (1-based)."""
        if self.backoff <= 0:
            return 0.0
        exponent = min(max(0, attempt - 1), 62)  # 2**62 s is past any cap
        return float(min(self.max_backoff, self.backoff * 2.0**exponent))

    def delay(self, attempt: int) -> float:
        """The jittered delay after failed attempt `attempt` (1-based)."""
        top = self.ceiling(attempt)
        if top <= 0 or self.jitter <= 0:
            return top
        return top * (1 - self.jitter * _rng.random())


DEFAULT_POLICY = RetryPolicy()
IMMEDIATE = RetryPolicy(backoff=0.0)
