"""Age gates on servers outside UTC, for both column types a world can have.

Before upstream 0026 every column is `timestamp`: JS-written ones (completed_at, updated_at,
...) hold UTC wall time, DB defaults (created_at) the writer session's wall time. After 0026
they are `timestamptz`. A gate written for one type (`x >= (now() AT TIME ZONE 'UTC') - age`)
is off by the server's offset on the other: in New York a torn write seconds old read as
hours old (reported critical while its write may still land); in Tokyo one hours old stayed
"in flight". The world here is written by the real package into a database whose TimeZone is
not UTC (as a server configured that way gives every session), with the columns converted to
`timestamptz` the way 0026 does it (under a UTC session) for the second type.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.checks.conftest import assert_fires, assert_in_flight
from tests.checks.test_wf101 import orphan_step
from tests.checks.test_wf111 import finished_step_without_event
from tests.checks.test_wf112 import completed_wait_without_event
from tests.conftest import Db

ZONES = ("America/New_York", "Asia/Tokyo")


def to_timestamptz(db: Db) -> None:
    """The effect of upstream 0026 on a world: every `timestamp` column becomes `timestamptz`,
    converted under a UTC session (so UTC wall times become the instants they meant)."""
    with db.connect() as conn, conn.transaction():
        conn.execute("SET LOCAL TimeZone = 'UTC'")
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'workflow' AND data_type = 'timestamp without time zone'"
        ).fetchall()
        assert len(columns) > 10
        for table, column in columns:
            conn.execute(f'ALTER TABLE workflow."{table}" ALTER COLUMN "{column}" TYPE timestamptz')


@pytest.fixture(
    params=[(z, t) for z in ZONES for t in ("timestamp", "timestamptz")],
    ids=lambda p: f"{p[0].split('/')[1]}-{p[1]}",
)
def zoned(request: pytest.FixtureRequest, real_world: Db) -> Db:
    zone, column_type = request.param
    if column_type == "timestamptz":
        to_timestamptz(real_world)
    with real_world.connect() as conn:
        conn.execute(f"ALTER DATABASE \"{real_world.name}\" SET TimeZone = '{zone}'")
    with real_world.connect() as conn:  # a new session: the database's zone applies
        assert conn.execute("SHOW TimeZone").fetchone() == (zone,)
        typ = conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = 'workflow'"
            " AND table_name = 'workflow_steps' AND column_name = 'completed_at'"
        ).fetchone()
    assert typ == (
        "timestamp with time zone"
        if column_type == "timestamptz"
        else "timestamp without time zone",
    )
    return real_world


def _age(db: Db, table: str, columns: tuple[str, ...], hours: int) -> None:
    """Make the torn write `hours` old (as if it happened then), for either column type."""
    sets = ", ".join(f"{c} = {c} - make_interval(hours => {hours})" for c in columns)
    with db.connect() as conn:
        conn.execute(f"UPDATE workflow.{table} SET {sets}")


def test_a_fresh_torn_write_is_in_flight(zoned: Db, world: Any, doctor: Any) -> None:
    finished_step_without_event(world, zoned, "step_completed")  # JS-written completed_at
    completed_wait_without_event(world, zoned)  # JS-written completed_at
    orphan_step(world, zoned)  # DB-default created_at
    for code in ("WF111", "WF112", "WF101"):
        assert_in_flight(doctor, zoned, code)


def test_an_old_torn_write_is_actionable_and_its_age_is_right(
    zoned: Db, world: Any, doctor: Any
) -> None:
    _, step_id = finished_step_without_event(world, zoned, "step_completed")
    _, wait_id = completed_wait_without_event(world, zoned)
    _age(zoned, "workflow_steps", ("completed_at", "updated_at"), 2)
    _age(zoned, "workflow_waits", ("completed_at", "updated_at"), 2)
    # two hours old: past a 1 h gate, not past a 3 h gate (the offsets here are 5 h and 9 h)
    assert_fires(doctor, zoned, "WF111", step_id, "--min-age", "1h")
    assert_fires(doctor, zoned, "WF112", wait_id, "--min-age", "1h")
    for code in ("WF111", "WF112"):
        status, checks, _ = doctor(zoned, "--only", code, "--min-age", "3h")
        assert checks[code]["count"] == 0 and checks[code]["in_flight"] == 1, checks[code]
        assert status == 0
