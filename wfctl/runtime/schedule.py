"""Schedules: `@wf.workflow(schedule="*/5 * * * *")` starts one run per cron tick.

Every `wfctl worker` serving a scheduled workflow runs a scheduler thread that, at each tick
(UTC), creates that tick's run and hands it to the worker's queue. Exactly one run per
(workflow, tick), however many workers race: the tick's run id is derived from the workflow
name and the tick (`tick_run_id`: a ULID whose time is the tick and whose random part is a
hash of name and tick), so the run row's primary key is the idempotency key; a worker that
loses the race finds the run there. Nothing else is stored: no schedule table, no scan of
`workflow_runs` (the attribute idempotency key would scan it: it has no index).

Catch-up (a worker restart, every worker down for a while): at start, and at every tick, the
scheduler looks back over the ticks of the last `catchup` (default 1 hour) plus the one tick
before that window, finds the newest tick that has its run, and starts every tick after it up
to now. So a restart shorter than `catchup` misses nothing; ticks older than the window are
skipped (a run per missed tick after a week's outage would be a storm). A schedule that has no
run in that range (its first deployment) starts with the next tick, never a past one.

croniter parses the expressions: five fields (minute hour day month weekday), an optional
sixth for seconds (croniter's order: seconds last, `* * * * * */10` = every 10 s), or the
@hourly/@daily/@weekly/@monthly/@yearly aliases, evaluated in UTC.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from croniter import croniter
from ulid import ULID

DEFAULT_CATCHUP = timedelta(hours=1)
MAX_CATCHUP_TICKS = 1000  # never start more than this many past ticks in one look


@dataclass(frozen=True)
class Schedule:
    """A parsed cron schedule (UTC) and its catch-up window."""

    expression: str
    catchup: timedelta = DEFAULT_CATCHUP

    @classmethod
    def parse(cls, expression: str, catchup: timedelta | None = None) -> Schedule:
        text = " ".join(str(expression).split())
        if len(text.split()) not in (5, 6) and not text.startswith("@"):
            raise ValueError(
                f"schedule {expression!r}: expected five cron fields (minute hour day month"
                " weekday), e.g. '*/5 * * * *', a sixth for seconds ('* * * * * */10'), or"
                " @hourly/@daily/@weekly/@monthly/@yearly"
            )
        if not croniter.is_valid(text):
            raise ValueError(f"schedule {expression!r} is not a valid cron expression")
        window = DEFAULT_CATCHUP if catchup is None else catchup
        if window < timedelta(0):
            raise ValueError("catchup must not be negative")
        return cls(text, window)

    def check_signature(self, fn: Callable[..., Any]) -> None:
        """A scheduled workflow takes no argument, or one: the tick (an aware datetime)."""
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(params) > 1:
            raise TypeError(
                f"scheduled workflow {fn.__name__} takes at most one parameter without a"
                " default (the tick, a datetime)"
            )

    def args(self, fn: Callable[..., Any], tick: datetime) -> list[Any]:
        """The run's input: [tick] when the workflow takes a parameter, else []."""
        takes = any(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
            for p in inspect.signature(fn).parameters.values()
        )
        return [tick] if takes else []

    def next_after(self, when: datetime) -> datetime:
        """The first tick strictly after `when` (aware UTC)."""
        nxt = croniter(self.expression, when.astimezone(UTC)).get_next(datetime)
        assert isinstance(nxt, datetime)
        return nxt.astimezone(UTC)

    def ticks_back(self, now: datetime) -> list[datetime]:
        """The ticks in (now - catchup, now], plus the one tick before that window, oldest
        first (at most MAX_CATCHUP_TICKS + 1)."""
        it = croniter(self.expression, now.astimezone(UTC) + timedelta(microseconds=1))
        start = now - self.catchup
        out: list[datetime] = []
        while len(out) <= MAX_CATCHUP_TICKS:
            tick = it.get_prev(datetime)
            assert isinstance(tick, datetime)
            tick = tick.astimezone(UTC)
            out.append(tick)
            if tick <= start:
                break
        out.reverse()
        return out


def tick_run_id(workflow_name: str, tick: datetime) -> str:
    """The run id of a workflow's run for one tick: the same in every worker."""
    tick = tick.astimezone(UTC)
    millis = int(tick.timestamp() * 1000)
    digest = hashlib.sha256(f"wfctl.schedule\0{workflow_name}\0{millis}".encode()).digest()
    rand = int.from_bytes(digest[:10], "big")
    return "wrun_" + str(ULID.from_int((millis << 80) | rand))


def due_ticks(
    plan: Schedule, workflow_name: str, now: datetime, exists: Any, since: datetime | None
) -> list[datetime]:
    """The ticks to start now. `exists(run_id) -> bool`; `since`: the newest tick this
    process already made sure of (None at start: look back over the catch-up range)."""
    if since is not None:
        ticks: list[datetime] = []
        tick = plan.next_after(since)
        while tick <= now and len(ticks) < MAX_CATCHUP_TICKS:
            if now - tick <= plan.catchup:  # a stalled scheduler: the window holds here too
                ticks.append(tick)
            tick = plan.next_after(tick)
        return ticks
    back = plan.ticks_back(now)
    for i in range(len(back) - 1, -1, -1):
        if exists(tick_run_id(workflow_name, back[i])):
            return [t for t in back[i + 1 :] if now - t <= plan.catchup]
    return []  # a schedule with no run in range: start with the next tick
