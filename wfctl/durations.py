"""Durations as operators type them: `90s`, `10m`, `2h`, `7d`, `1h30m`, or plain seconds."""

from __future__ import annotations

import re
from datetime import timedelta

from wfctl.errors import UsageError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Longer than any retention or age anyone means, and `now() - interval` stays a timestamp.
MAX_DAYS = 36_500


def parse_duration(text: str, option: str = "duration") -> timedelta:
    """Parse `1h30m`-style text; a malformed value is a usage error naming the option."""
    value = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        seconds = float(value)
    else:
        parts = _PART.findall(value)
        if not value or "".join(n + u for n, u in parts) != value:
            raise UsageError(
                f"{option}: cannot read {text!r} as a duration",
                hint="use e.g. 90s, 10m, 2h, 7d, 1h30m",
            )
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if seconds > MAX_DAYS * 86400:
        raise UsageError(
            f"{option}: {text.strip()!r} is longer than {MAX_DAYS:,} days", hint="use e.g. 30d"
        )
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """THE age form of every output: the two largest units, `1d 22h`, `46m 40s`, `10m`, `45s`
    (a zero second unit is left out). doctor's SQL spells the same form (WF135)."""
    seconds = max(0, int(delta.total_seconds()))
    parts: list[tuple[int, str]] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (parts and len(parts) < 2):
            parts.append((seconds // size, unit))
            seconds %= size
        if len(parts) == 2:
            break
    if not parts:
        return "0s"
    shown = [parts[0]] + [p for p in parts[1:] if p[0]]
    return " ".join(f"{n}{u}" for n, u in shown)
