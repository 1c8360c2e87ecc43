"""Runs the target's own runtime made are judged by their ids, not by the version pair:
beta.29's runtime (core 5.0.0-beta.39) mints the ids the 5.0 rule derives, so its runs in
flight continue whichever source the operator names, and a carry leaves them untouched."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.conftest import Db
from tests.judge import wait_until
from tests.migrate_inflight.worlds import SETTLE, finish, has_event, serving
from tests.migrate_inflight.worlds import Flight as F
from wfctl.migrate import inflight

BETA29 = "5.0.0-beta.29"


@pytest.mark.slow
def test_beta29_runs_in_flight_continue(real_world: Db, tmp_path: Path) -> None:
    dsn = real_world.dsn
    with serving(dsn, tmp_path, "beta29") as rt:
        runs = [
            F("asleep", rt.start_run("nap", [1, 15], module="corpus"), {"a": 2, "b": 12}),
            F("hook", rt.start_run("hooked", [2, "native-tok"], module="corpus"), {"total": 102},
              "native-tok"),
        ]  # fmt: skip
        wait_until(lambda: has_event(dsn, runs[0].run_id, "wait_created"), SETTLE, "the sleep")
        wait_until(lambda: has_event(dsn, runs[1].run_id, "hook_created"), SETTLE, "the hook")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for source in ("5.0.0-beta.27", BETA29, "4.1.1"):
            fates = inflight.assess(conn, source, BETA29)
            assert {f.run_id for f in fates} == {r.run_id for r in runs}
            assert {f.fate for f in fates} == {"continues"}, fates
            assert all("are the ones the target mints" in f.reason for f in fates), fates
        done = inflight.carry(conn, [r.run_id for r in runs], "4.1.1", BETA29, reason="no-op")
        assert {c.outcome for c in done} == {"continues"}
        assert conn.execute("SELECT count(*) FROM wfctl.repair_log").fetchone() == (0,)
    with serving(dsn, tmp_path, "beta29", JUDGE_REENQUEUE="0") as rt:
        assert set(finish(rt, dsn, runs).values()) == {"completed"}
