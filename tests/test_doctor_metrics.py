"""doctor's Prometheus output: the oldest stranded run's age (WF133), on a real world."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import realworld as rw
from tests.conftest import Db, node_available

pytestmark = pytest.mark.skipif(not node_available(), reason="node/npm not found")
GAUGE = "wfctl_doctor_oldest_stranded_run_age_seconds"


def _gauges(run_cli, db: Db) -> dict[str, float]:
    status, out, err = run_cli(
        "--dsn", db.dsn, "--format", "prometheus", "doctor", "--min-age", "10m"
    )
    assert status in (0, 2), err
    return {
        s.name: s.value
        for f in text_string_to_metric_families(out)
        for s in f.samples
        if not s.labels
    }


def test_oldest_stranded_run_age_gauge(real_world: Db, run_cli) -> None:
    assert _gauges(run_cli, real_world)[GAUGE] == 0  # none stranded: 0, not absent
    real = rw.RealWorld(real_world.dsn)
    old, young = real.new_run(), real.new_run()  # started, no job, no hook: stranded
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_runs SET updated_at = updated_at - interval '2 hours'"
            " WHERE id = %s",
            (old,),
        )
        conn.execute(
            "UPDATE workflow.workflow_runs SET updated_at = updated_at - interval '1 hour'"
            " WHERE id = %s",
            (young,),
        )
    age = _gauges(run_cli, real_world)[GAUGE]
    assert 2 * 3600 <= age < 3 * 3600
