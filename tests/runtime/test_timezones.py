"""The runtime's timestamps on servers outside UTC, for both column types a world can have.

Before upstream 0026 every column is `timestamp`: the package writes JS-clock columns
(started_at, completed_at, updated_at, retry_after, resume_at) as UTC wall time and DB
defaults (created_at) as the session's wall time. After 0026 they are `timestamptz` (instants).
wfctl's runtime must write each column the way the package does in that world, whatever the
server's TimeZone: here a run with a retried step and a sleep is driven through the runtime on
a database whose TimeZone is New York or Tokyo, and every stored value must be the true
instant (between clock readings taken before and after), and the sleep must wake after its
resume time, not hours off.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.checks.test_timezones import ZONES, to_timestamptz
from tests.conftest import Db
from tests.runtime import flows
from tests.runtime.conftest import doctor_clean
from wfctl.runtime.executor import Done, Executor, create
from wfctl.runtime.store import Store

SLEEP = 0.3
SLACK = timedelta(seconds=1)  # millisecond rounding of JS-clock values, not an hours' offset


@pytest.fixture(
    params=[(z, t) for z in ZONES for t in ("timestamp", "timestamptz")],
    ids=lambda p: f"{p[0].split('/')[1]}-{p[1]}",
)
def zoned(request: pytest.FixtureRequest, world: Db) -> Db:
    """A world of either era with the given column type, in a database whose TimeZone is
    not UTC (every new session gets it, as from a server configured that way)."""
    zone, column_type = request.param
    if column_type == "timestamptz":
        to_timestamptz(world)
    with world.connect() as conn:
        conn.execute(f"ALTER DATABASE \"{world.name}\" SET TimeZone = '{zone}'")
    return world


def instants(
    conn: psycopg.Connection[Any], table: str, columns: tuple[str, ...], where: str, *params: str
) -> list[datetime | None]:
    """The instants stored in `columns` of one row, read by each column's convention:
    timestamptz as it is, a `timestamp` DB default (created_at) as the session's wall time,
    any other `timestamp` as UTC wall time."""
    types = dict(
        conn.execute(
            "SELECT column_name::text, data_type::text FROM information_schema.columns"
            " WHERE table_schema = 'workflow' AND table_name = %s",
            (table,),
        ).fetchall()
    )
    exprs = []
    for c in columns:
        if types[c] == "timestamp with time zone":
            exprs.append(c)
        elif c == "created_at":
            exprs.append(f"{c} AT TIME ZONE current_setting('TimeZone')")
        else:
            exprs.append(f"{c} AT TIME ZONE 'UTC'")
    row = conn.execute(
        f"SELECT {', '.join(exprs)} FROM workflow.{table} WHERE {where}", params
    ).fetchone()
    assert row is not None, (table, params)
    return list(row)


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    value: datetime = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    return value


def within(values: list[datetime | None], start: datetime, end: datetime) -> None:
    for v in values:
        assert v is not None and start - SLACK <= v <= end + SLACK, (v, start, end)


def drive(store: Store, run_id: str, **kw: Any) -> Done:
    ex = Executor(flows.wf, store)
    try:
        return ex.drive(run_id, **kw)
    finally:
        ex.close()


def test_runtime_writes_true_instants_and_wakes_on_time(zoned: Db, run_cli: Any) -> None:
    flows.reset()
    with zoned.connect() as conn:
        assert conn.execute("SHOW TimeZone").fetchone()[0] in ZONES
        store = Store(conn)
        start = db_now(conn)
        run_id = create(flows.dozing, ["tz", SLEEP], conn=conn).run_id
        first = drive(store, run_id)  # stops at the retry delay of `flaky`
        assert first.status == "running" and first.next_due is not None, first
        (retry_after,) = instants(conn, "workflow_steps", ("retry_after",), *_step(run_id, "flaky"))
        assert retry_after == first.next_due
        within([retry_after], start, db_now(conn) + timedelta(seconds=1))

        # Past the retry delay: the step runs again and the run stops at its sleep.
        waiting: Done | None = None
        for _ in range(100):
            waiting = drive(store, run_id)
            if conn.execute(
                "SELECT 1 FROM workflow.workflow_waits WHERE run_id = %s", (run_id,)
            ).fetchone():
                break
            time.sleep(0.05)
        assert waiting is not None and waiting.status == "running"
        mid = db_now(conn)
        wait_id = conn.execute(
            "SELECT wait_id FROM workflow.workflow_waits WHERE run_id = %s", (run_id,)
        ).fetchone()[0]
        created, resume_at = instants(
            conn, "workflow_waits", ("created_at", "resume_at"), "wait_id = %s", wait_id
        )
        within([created], start, mid)
        assert resume_at is not None and waiting.next_due == resume_at
        within([resume_at - timedelta(seconds=SLEEP)], start, mid)
        for step in ("add", "flaky"):
            within(
                instants(
                    conn,
                    "workflow_steps",
                    ("created_at", "started_at", "completed_at", "updated_at"),
                    *_step(run_id, step),
                ),
                start,
                mid,
            )

        done = drive(store, run_id, wait=True, timeout=30)
        end = db_now(conn)
        assert done.status == "completed" and done.output == 3
        within(
            instants(
                conn,
                "workflow_runs",
                ("created_at", "started_at", "completed_at", "updated_at"),
                "id = %s",
                run_id,
            ),
            start,
            end,
        )
        # The sleep woke at its resume time: wait_completed is stamped after resume_at.
        (woke_at,) = instants(
            conn,
            "workflow_events",
            ("created_at",),
            "run_id = %s AND type = 'wait_completed'",
            run_id,
        )
        assert woke_at is not None and woke_at >= resume_at
        within([woke_at], resume_at, end)
    doctor_clean(run_cli, zoned.dsn)


def _step(run_id: str, name: str) -> tuple[str, str, str]:
    """WHERE clause and params of one step row of the run, by step name."""
    return "run_id = %s AND step_name LIKE %s", run_id, f"%{name}%"
