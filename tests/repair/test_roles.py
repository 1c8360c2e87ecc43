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
    # every writer refuses before writing (exit 3: it cannot see the queue), naming the table
    for args in ((), ("--unlock-older-than", "10m")):
        status, report, err = repair(run_cli, writer, *args)
        assert status == 3 and not report, err
        assert "row-level security" in err and "graphile_worker._private_jobs" in err, err
        assert "no policy for the role" in err
    assert digests(real_world.dsn) == before
    assert runs["locked"] != runs["free"]


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


def tenant_recipe(role: str) -> list[str]:
    """The repair recipe, plus a tenant-style policy on the world's events that hides the
    run-level events older than a day (what a multi-tenant database adds for app roles)."""
    return [
        *repair_recipe(role),
        "ALTER TABLE workflow.workflow_events ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY tenant_recent ON workflow.workflow_events FOR ALL TO {role}"
        " USING (correlation_id IS NOT NULL OR created_at > localtimestamp - interval '1 day')"
        " WITH CHECK (true)",
    ]


def old_runs(world: rw.RealWorld, db: Db, n: int = 3) -> list[str]:
    """Healthy running runs whose events are two days old."""
    made = [rw.running_with_completed_step_ops() for _ in range(n)]
    world.ok([op for _, ops in made for op in ops])
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}) for run_id, _ in made])
    with db.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_events SET created_at = created_at - interval '2 days'"
        )
    return [run_id for run_id, _ in made]


def test_a_tenant_policy_on_the_events_makes_doctor_unknown_and_every_writer_refuse(
    world, real_world, roles, run_cli
) -> None:
    old_runs(world, real_world)
    owner_status, owner = doctor(run_cli, real_world.dsn)
    assert owner_status == 0, [c for c in owner["checks"] if c["count"]]
    tenant = roles("wfctl_tenant", tenant_recipe)
    # what only looks missing (run_created, run-level events) is UNKNOWN, never critical
    status, report = doctor(run_cli, tenant)
    checks = verdicts(report)
    for code in ("WF111", "WF121", "WF141"):
        assert checks[code][0] == "unknown", (code, checks[code])
    wf121 = next(c for c in report["checks"] if c["code"] == "WF121")
    assert "workflow.workflow_events" in wf121["message"] and "tenant_recent" in wf121["message"]
    assert status == 3 and report["summary"]["status"] == "unknown"
    _, out, _ = run_cli("--dsn", tenant, "--format", "json", "info")
    [hidden] = json.loads(out)["hidden_rows"]
    assert hidden["table"] == "workflow.workflow_events" and "tenant_recent" in hidden["why"]
    before = digests(real_world.dsn)
    for args in (
        ("repair", "--apply", "--yes", "--reason", "t", *FORCE),
        ("repair", *FORCE),
        ("gc", "--apply", "--yes", "--reason", "t", "--older-than", "1d"),
        ("runs", "cancel", "--where", "status=running", "--apply", "--yes", "--reason", "t"),
        ("runs", "cancel", "wrun_01JZZZZZZZZZZZZZZZZZZZZZZZ"),
    ):
        status, _, err = run_cli("--dsn", tenant, *args)
        assert status == 3, (args, err)
        assert "tenant_recent" in err and "workflow.workflow_events" in err, (args, err)
    assert digests(real_world.dsn) == before
    status, out, _ = run_cli("--dsn", tenant, "info")
    assert "HIDDEN ROWS:  row-level security on workflow.workflow_events" in out, out
    # the recipe of docs/cli.md, 'Roles': one more permissive policy for the wfctl role
    role = psycopg.conninfo.conninfo_to_dict(tenant)["user"]
    with real_world.connect() as conn:
        conn.execute(
            f"CREATE POLICY wfctl_repair ON workflow.workflow_events FOR ALL TO {role}"
            " USING (true) WITH CHECK (true)"
        )
    _, out, _ = run_cli("--dsn", tenant, "--format", "json", "info")
    assert json.loads(out)["hidden_rows"] == []
    status, report = doctor(run_cli, tenant)
    assert (status, verdicts(report)) == (owner_status, verdicts(owner))
    status, out, err = run_cli("--dsn", tenant, "--format", "json", "repair", *FORCE)
    assert status == 0 and json.loads(out)["items"] == [], (out, err)


def test_a_view_in_the_place_of_the_events_table_is_not_trusted(world, real_world, run_cli):
    """A security-barrier view that filters the events, where the table should be: what
    reads it is UNKNOWN and nothing is written."""
    old_runs(world, real_world, n=1)
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_events RENAME TO workflow_events_all")
        conn.execute(
            "CREATE VIEW workflow.workflow_events WITH (security_barrier) AS"
            " SELECT * FROM workflow.workflow_events_all"
            " WHERE created_at > localtimestamp - interval '1 day'"
        )
    status, report = doctor(run_cli, real_world.dsn)
    wf121 = next(c for c in report["checks"] if c["code"] == "WF121")
    assert wf121["status"] == "unknown" and "is a view" in wf121["message"], wf121
    assert status == 2  # WF151: the catalog differs (a view where the table should be)
    before = digests(real_world.dsn)
    status, _, err = run_cli(
        "--dsn", real_world.dsn, "repair", "--apply", "--yes", "--reason", "t", *FORCE
    )
    assert status == 3 and "workflow.workflow_events" in err, err
    assert digests(real_world.dsn) == before


def test_a_policy_created_after_wfctl_looked_fails_the_reads_loudly(
    world, real_world, roles
) -> None:
    """PostgreSQL's own guard: inspect armed `row_security = off` (no RLS applied to the role
    then), so a read a policy created afterwards would filter fails instead of reading short."""
    from wfctl.connection.db import read_only
    from wfctl.doctor import registry as checks_registry
    from wfctl.doctor import runner as doctor_runner
    from wfctl.world import model

    old_runs(world, real_world, n=1)

    def reader(role: str) -> list[str]:
        return [
            f"CREATE ROLE {role} LOGIN",
            f"GRANT USAGE ON SCHEMA workflow, workflow_drizzle TO {role}",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA workflow, workflow_drizzle TO {role}",
        ]

    dsn = roles("wfctl_late", reader)
    role = psycopg.conninfo.conninfo_to_dict(dsn)["user"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        with read_only(conn):
            world_seen = model.inspect(conn, with_drift=False)
        assert not getattr(world_seen, "hidden", []) and not getattr(world_seen, "rls_active", 0)
        with real_world.connect() as owner:
            owner.execute("ALTER TABLE workflow.workflow_events ENABLE ROW LEVEL SECURITY")
            owner.execute(
                f"CREATE POLICY late ON workflow.workflow_events FOR SELECT TO {role}"
                " USING (created_at > localtimestamp - interval '1 day')"
            )
        checks = [checks_registry.BY_CODE[c] for c in ("WF111", "WF121")]
        options = doctor_runner.DoctorOptions(min_age=__import__("datetime").timedelta(0))
        with read_only(conn):
            report = doctor_runner.run(conn, world_seen, checks, options)
    for result in report.results:
        assert result.status == "unknown", (result.check.code, result.status, result.count)
        assert "row-level security" in result.message
