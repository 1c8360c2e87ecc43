"""A torn write on worlds of 4.1.5, 4.2.0, 4.3.0 and 5.0.0-beta.27, written by each package's own
`events.create` (tests/realworld.py driving that version) and split by a failing trigger, as a
crash between the step row and its event leaves it: doctor weighs it by that version's runtime
(the worst case among the versions the journal leaves, unless pinned) and repair heals it with
that version's payload shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.conftest import Db, Server, _create_db, _drop_db, _release_template
from tests.conftest import install_release_package as install
from tests.faults import drop_faults
from tests.releases.conftest import FORCE
from wfctl.world import codec

# version -> (WF101's weight unpinned, pinned): 4.3.6/4.3.7 write step_created atomically, so
# on a 4.3 journal the worst case is the check's own (critical); 4.3.0 itself heals it, and so
# does 5.0.0-beta.27's runtime (a fan-out step's row is re-used: its corpus world shows it).
WEIGHT = {
    "4.1.5": ("warning", "warning"),
    "4.2.0": ("warning", "warning"),
    "4.3.0": ("critical", "warning"),
    "5.0.0-beta.27": ("warning", "warning"),
}


@pytest.fixture(params=list(WEIGHT))
def torn(
    request: pytest.FixtureRequest, pg_server: Server, release_templates: dict[str, str]
) -> Iterator[tuple[str, Db, str, str]]:
    version = request.param
    db = _create_db(pg_server, _release_template(pg_server, release_templates, version))
    world = rw.RealWorld(db.dsn, folder=install(version))
    run_id, step_id = orphan_step(world, db)
    with db.connect() as conn:
        drop_faults(conn)
    yield version, db, run_id, step_id
    _drop_db(pg_server, db)


def _json(run_cli: Any, db: Db, *args: str) -> tuple[int, dict[str, Any]]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
    assert out, err
    return status, json.loads(out)


def test_weighed_by_the_version_and_healed_in_its_shape(torn, run_cli) -> None:
    version, db, run_id, step_id = torn
    unpinned, pinned = WEIGHT[version]
    status, report = _json(run_cli, db, "doctor", "--only", "WF101", *FORCE[:2])
    [check] = report["checks"]
    assert check["count"] == 1 and check["samples"][0]["entity_id"] == step_id
    assert check["status"] == unpinned, check
    status, report = _json(
        run_cli, db, "doctor", "--only", "WF101", *FORCE[:2], "--package", version
    )
    assert report["checks"][0]["status"] == pinned

    status, report = _json(run_cli, db, "repair", "--apply", "--yes", "--reason", "t", *FORCE,
                           "--only", "WF101", "--package", version)  # fmt: skip
    assert status == 0, report
    assert [i["outcome"] for i in report["items"]] == ["applied"]
    with db.connect() as conn:
        [payload] = conn.execute(
            "SELECT payload_cbor FROM workflow.workflow_events WHERE run_id = %s AND"
            " correlation_id = %s AND type = 'step_created'",
            (run_id, step_id),
        ).fetchone()
    assert set(codec.decode(payload)) == {"stepName", "input"}
