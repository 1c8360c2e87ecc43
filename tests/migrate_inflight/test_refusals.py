"""What the carry refuses, on a world made by the real 4.1.1 runtime: each refusal names the
run's reason, leaves the world byte-identical, and the plan (assess) says `fails` for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.conftest import Server
from tests.corpus.snapshot import digests
from tests.migrate_inflight.worlds import SourceWorld, clone
from wfctl.migrate import inflight
from wfctl.world import codec, nodeids

BETA29 = "5.0.0-beta.29"


@pytest.fixture
def world41(
    pg_server: Server, source_world: Callable[[str], SourceWorld]
) -> tuple[SourceWorld, str]:
    world = source_world("4.1.1")
    return world, clone(pg_server, world.template, "inflight_refuse")


def _refused(dsn: str, run_id: str, words: str) -> None:
    """assess says `fails` with `words`; carry refuses with the same, writing nothing."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        fate = {f.run_id: f for f in inflight.assess(conn, "4.1.1", BETA29)}[run_id]
        assert fate.fate == "fails" and words in fate.reason, fate
        # The audit schema is created before the first carry; the world's tables must not move.
        inflight.carry(conn, [], "4.1.1", BETA29, reason="setup")
        before = digests(dsn)
        [done] = inflight.carry(conn, [run_id], "4.1.1", BETA29, reason="refused")
        assert done.outcome == "refused" and words in done.reason, done
        assert digests(dsn) == before


def _run(dsn: str, run_id: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT name, (floor(extract(epoch FROM started_at) * 1000))::bigint"
            " FROM workflow.workflow_runs WHERE id = %s",
            (run_id,),
        ).fetchone()
    assert row is not None
    return {"name": row[0], "started_ms": row[1]}


def test_a_job_a_worker_holds_is_refused(world41: tuple[SourceWorld, str]) -> None:
    world, dsn = world41  # the mid-step job is still held by the SIGKILLed 4.x worker
    _refused(dsn, world.run("midstep").run_id, "holds its job now")


def test_a_runtime_minted_hook_token_is_refused(world41: tuple[SourceWorld, str]) -> None:
    """createHook() without a token: the 5.0 replay mints another token from its own seed and
    diverges on hook_created (`belongs to token ...`), and callers hold the old one."""
    world, dsn = world41
    run_id = world.run("hook0").run_id
    run = _run(dsn, run_id)
    token = nodeids.minted_token(f"{run_id}:{run['name']}:{run['started_ms']}", 16)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE workflow.workflow_hooks SET token = %s WHERE run_id = %s",
                     (token, run_id))  # fmt: skip
        conn.execute(
            "UPDATE workflow.workflow_events SET payload_cbor = %s"
            " WHERE run_id = %s AND type = 'hook_created'",
            (codec.encode({"token": token, "isWebhook": False}), run_id),
        )
    _refused(dsn, run_id, f"hook token {token} was minted by the runtime")


def test_ids_no_rule_minted_are_refused(world41: tuple[SourceWorld, str]) -> None:
    world, dsn = world41
    run_id = world.run("asleep0").run_id
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE workflow.workflow_events SET correlation_id = left(correlation_id, 15)"
            " || 'ZZZZZZZZZZZZZZZZ' WHERE run_id = %s AND correlation_id LIKE 'wait_%%'",
            (run_id,),
        )
    _refused(dsn, run_id, "minted by neither the source rule")


def test_an_id_copied_into_a_payload_is_refused(world41: tuple[SourceWorld, str]) -> None:
    world, dsn = world41
    run_id = world.run("hook1").run_id
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE workflow.workflow_hooks SET metadata_cbor = convert_to(hook_id, 'UTF8')"
            " WHERE run_id = %s",
            (run_id,),
        )
    _refused(dsn, run_id, "occur inside payloads: workflow_hooks (1)")


def test_a_run_that_ended_is_left_alone(world41: tuple[SourceWorld, str]) -> None:
    world, dsn = world41
    run_id = world.run("asleep1").run_id
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE workflow.workflow_runs SET status = 'cancelled' WHERE id = %s",
                     (run_id,))  # fmt: skip
        assert run_id not in {f.run_id for f in inflight.assess(conn, "4.1.1", BETA29)}
        [done] = inflight.carry(conn, [run_id, "wrun_nope"][:1], "4.1.1", BETA29, reason="x")
        [gone] = inflight.carry(conn, ["wrun_nope"], "4.1.1", BETA29, reason="x")
    assert (done.outcome, gone.outcome) == ("gone", "gone")
    assert "cancelled" in done.reason
