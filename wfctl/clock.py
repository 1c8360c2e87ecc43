"""The one timestamp form of every output: ISO 8601 with offset, millisecond precision.

A world mixes clocks: the package stores JS `Date`s as UTC wall clock in `timestamp`
columns, column defaults as the writing session's wall clock, graphile_worker's columns as
`timestamptz`. Whatever reads a value makes it aware where it knows the clock (the doctor's
SQL returns `timestamptz`; `runtime.store.Store.aware` for DB defaults); a naive value that
still reaches output is taken as UTC, the package's own convention.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo


def timestamp(value: datetime | None, naive_zone: tzinfo = UTC) -> str | None:
    """`value` as ISO 8601 with its offset and ms precision; None stays None."""
    if value is None:
        return None
    aware = value if value.tzinfo is not None else value.replace(tzinfo=naive_zone)
    return aware.isoformat(timespec="milliseconds")
