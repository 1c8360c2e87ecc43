"""The 4.x corpus worlds moved onto every PostgreSQL major this machine can start (14-18).

Why: operators move 4.x worlds with pg_dump/restore across majors too, and what a restore
prints back (the 4.3.x creation-unique index predicate, the 4.1.x `public` enums) differs by
major. One release per recorded journal (`MOVED`): its faulted world as its real runtime left
it (`World.source`, before the session's own dump/restore) is moved into a throwaway server
of each major; doctor there must
say exactly what it said on the session's server: the same codes on the same runs, nothing
about the catalog (WF151 compares with that release's own catalog), no healthy run flagged.
Marked `pgmajors` and `slow`; a major that is absent is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import judge, pgmajors
from tests.conftest import Db
from tests.corpus import worlds4
from tests.corpus.conftest import Trials, findings, wfctl

pytestmark = [
    pytest.mark.pgmajors,
    pytest.mark.slow,
    pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime"),
]

MAJORS = (14, 15, 16, 17, 18)


@pytest.fixture(scope="module", params=MAJORS, ids=lambda m: f"pg{m}")
def target(request: pytest.FixtureRequest) -> Iterator[pgmajors.Cluster]:
    major = request.param
    if major not in pgmajors.installs():
        pytest.skip(f"PostgreSQL {major} is not available here (see tests/pgmajors.py)")
    with pgmajors.cluster(major) as started:
        yield started


# One release per journal (what a restore prints back depends on the catalog, and releases
# sharing a journal share it): 0000-0009, 0000-0010, 0000-0010 + 0015, 0000-0015.
MOVED = ("4.1.1", "4.2.0", "4.3.7", "5.0.0-beta.27")


@pytest.mark.parametrize(
    "release",
    [
        pytest.param(r, marks=[pytest.mark.slowest] if worlds4.RELEASES[r].slow else [])
        for r in MOVED
    ],
)
def test_a_4x_world_moved_to_each_major_reads_the_same(
    target: pgmajors.Cluster, release: str, trials: Trials
) -> None:
    trial = trials.get(f"{release}/faulted")
    assert trial.doctor is not None
    source = trials.server.dsn(trial.world.source)
    name = f"corpus{worlds4.db_tag(release)}_faulted"
    target.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    target.execute(f'CREATE DATABASE "{name}"')
    moved = Db(name, target.dsn(name))
    pgmajors.dump_restore(source, moved.dsn)
    doctor = wfctl(moved.dsn, "doctor", "--all", "--min-age", "0s", "--limit", "1000")
    assert doctor.report is not None, doctor.stderr
    here, there = findings(trial.doctor.report), findings(doctor.report)
    assert there.get(None, set()) == set(), there.get(None)
    assert there == here
    assert doctor.status == trial.doctor.status
