"""Least-privilege roles and graphile-worker's row-level security.

graphile-worker enables RLS on its `_private_*` tables and creates no policy: a role that does
not own them (and has no BYPASSRLS) reads 0 rows, with no error. Doctor must then say the queue
checks cannot run (UNKNOWN, the reason), never report an empty queue (false WF133 criticals);
repair must refuse every run whose locked-job guard it cannot evaluate, never skip the guard.
And the role recipe docs/cli.md prescribes (a doctor role, a repair role) works: created here
exactly as documented, doctor as the doctor role says what it says as the owner, repair as the
repair role does what it does as the owner.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.conftest import Db
from tests.corpus.snapshot import digests

PRIVATE = ("_private_jobs", "_private_tasks", "_private_job_queues", "_private_known_crontabs")
FORCE = ("--min-age", "0s", "--force-min-age")


def doctor_recipe(role: str) -> list[str]:
    """docs/cli.md, 'Roles': the doctor role (read only)."""
    return [
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA workflow, workflow_drizzle, graphile_worker TO {role}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA workflow, workflow_drizzle, graphile_worker"
        f" TO {role}",
        *(
            f"CREATE POLICY wfctl_read ON graphile_worker.{t} FOR SELECT TO {role} USING (true)"
            for t in PRIVATE
        ),
        f"GRANT USAGE ON SCHEMA wfctl TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA wfctl TO {role}",
    ]


def repair_recipe(role: str) -> list[str]:
    """docs/cli.md, 'Roles': the repair role (the world's rows, the queue, the audit log)."""
    return [
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA workflow, workflow_drizzle, graphile_worker, wfctl TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA workflow TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA workflow_drizzle TO {role}",
        f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA graphile_worker TO {role}",
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA graphile_worker, wfctl TO {role}",
        f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA graphile_worker TO {role}",
        f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA wfctl TO {role}",
        *(
            f"CREATE POLICY wfctl_repair ON graphile_worker.{t} FOR ALL TO {role}"
            " USING (true) WITH CHECK (true)"
            for t in PRIVATE
        ),
    ]


def without_policies(statements: list[str]) -> list[str]:
    """The same grants without the policies: what a recipe that forgets RLS gives."""
    return [s for s in statements if not s.startswith("CREATE POLICY")]


@pytest.fixture
def roles(real_world: Db) -> Iterator[Any]:
    """roles(prefix, recipe, policies=True) -> the DSN of a new role made by `recipe`."""
    made: list[str] = []

    def make(prefix: str, recipe: Any, policies: bool = True) -> str:
        role = f"{prefix}_{real_world.name}"
        statements = recipe(role)
        with real_world.connect() as conn:
            for statement in statements if policies else without_policies(statements):
                conn.execute(statement)
        made.append(role)
        return psycopg.conninfo.make_conninfo(real_world.dsn, user=role)

    yield make
    with real_world.connect() as conn:
        for role in made:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def the_world(world: rw.RealWorld, db: Db) -> dict[str, str]:
    """A healthy running run with its job; an orphan step whose job a worker took 20 minutes
    ago (the guard refuses it); an orphan step with an unlocked job (repairable)."""
    healthy, ops = rw.new_run_ops()
    locked, _ = orphan_step(world, db)
    free, _ = orphan_step(world, db)
    world.ok([*ops, *(rw.queue(rw.WORKFLOW, {"runId": r}) for r in (healthy, locked, free))])
    with db.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-busy',"
            " locked_at = now() - interval '20 minutes'"
            " WHERE convert_from(decode(payload ->> 'data', 'base64'), 'UTF8')::jsonb"
            " ->> 'runId' = %s",
            (locked,),
        )
    return {"healthy": healthy, "locked": locked, "free": free}


def doctor(run_cli: Any, dsn: str) -> tuple[int, dict[str, Any]]:
    status, out, err = run_cli("--dsn", dsn, "--format", "json", "doctor", *FORCE[:2])
    assert out, err
    return status, json.loads(out)


def verdicts(report: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {c["code"]: (c["status"], c["count"]) for c in report["checks"]}


def repair(run_cli: Any, dsn: str, *args: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = run_cli(
        "--dsn", dsn, "--format", "json", "repair", "--apply", "--yes", "--reason", "t",
        *FORCE, *args,
    )  # fmt: skip
    return status, json.loads(out) if out else {}, err


def test_a_role_rls_hides_the_queue_from_gets_unknown_and_refusals(
    world, real_world, roles, run_cli
) -> None:
    runs = the_world(world, real_world)
    reader = roles("wfctl_reader", doctor_recipe, policies=False)
    writer = roles("wfctl_writer", repair_recipe, policies=False)
    status, out, _ = run_cli("--dsn", reader, "info")
    assert status == 0 and "UNREADABLE: row-level security" in out
    _, out, _ = run_cli("--dsn", reader, "--format", "json", "info")
    assert "graphile_worker._private_jobs" in json.loads(out)["queue_hidden_by_rls"]
    status, report = doctor(run_cli, reader)
    checks = verdicts(report)
    for code in ("WF131", "WF132", "WF133", "WF134", "WF135"):
        assert checks[code][0] == "unknown", (code, checks[code])
    queue = next(c for c in report["checks"] if c["code"] == "WF133")
    assert "row-level security" in queue["message"] and "_private_jobs" in queue["message"]
    # not a false WF133 critical over an empty-looking queue; the orphan steps are critical
    assert status == 2 and report["summary"]["status"] == "critical"
    assert checks["WF101"] == ("critical", 2)
    before = digests(real_world.dsn)
    status, report, err = repair(run_cli, writer)
    outcomes = {(i["run_id"], i["outcome"]) for i in report["items"] if i["code"] == "WF101"}
    assert outcomes == {(runs["locked"], "refused"), (runs["free"], "refused")}, err
    assert all("row-level security" in i["reason"] for i in report["items"] if i["code"] == "WF101")
    assert status != 0 and digests(real_world.dsn) == before
    status, _, err = run_cli(
        "--dsn", writer, "repair", "--apply", "--yes", "--reason", "t", "--unlock-older-than", "10m"
    )
    assert status == 2 and "row-level security" in err and digests(real_world.dsn) == before


def test_the_documented_roles_see_and_act_as_the_owner(world, real_world, roles, run_cli) -> None:
    runs = the_world(world, real_world)
    reader = roles("wfctl_doctor", doctor_recipe)
    writer = roles("wfctl_repair", repair_recipe)
    owner_status, owner = doctor(run_cli, real_world.dsn)
    status, report = doctor(run_cli, reader)
    assert verdicts(report) == verdicts(owner) and status == owner_status
    status, report, err = repair(run_cli, writer)
    outcomes = {(i["run_id"], i["outcome"]) for i in report["items"] if i["code"] == "WF101"}
    assert outcomes == {(runs["locked"], "refused"), (runs["free"], "applied")}, (report, err)
    locked = next(
        i for i in report["items"] if i["run_id"] == runs["locked"] and i["code"] == "WF101"
    )
    assert "locked by worker-busy" in locked["reason"]
    assert status == 2
