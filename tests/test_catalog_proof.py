"""The proof: `wfctl bootstrap` builds exactly the catalog the real package's bootstrap builds.

The real world comes from `npm ci` of @workflow/world-postgres 5.0.0-beta.29 and its own
bootstrap CLI (drizzle migrations 0000-0017 + graphile-worker). Compared: a normalised
description from pg_catalog of schemas `workflow` and `workflow_drizzle`.
"""

from __future__ import annotations

from tests.conftest import real_bootstrap
from wfctl.world import catalog


def test_wfctl_bootstrap_equals_the_real_package(real_world, wfctl_world) -> None:
    with real_world.connect() as real, wfctl_world.connect() as ours:
        real_catalog = catalog.describe(real)
        our_catalog = catalog.describe(ours)
        assert catalog.diff(real_catalog, our_catalog) == []
        assert real_catalog == our_catalog
        # ... and so do the drizzle bookkeeping rows.
        query = "SELECT hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
        assert real.execute(query).fetchall() == ours.execute(query).fetchall()


def test_the_kept_expected_catalog_is_the_real_one(real_world) -> None:
    with real_world.connect() as real:
        assert catalog.diff(catalog.expected("beta29"), catalog.describe(real)) == []


def test_real_bootstrap_after_wfctl_bootstrap_changes_nothing(wfctl_world) -> None:
    query = "SELECT id, hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
    with wfctl_world.connect() as conn:
        before = catalog.describe(conn)
        rows_before = conn.execute(query).fetchall()
    real_bootstrap(wfctl_world.dsn)
    with wfctl_world.connect() as conn:
        assert catalog.describe(conn) == before
        assert conn.execute(query).fetchall() == rows_before
        # The package's bootstrap also installs its queue, which wfctl leaves to it.
        assert conn.execute("SELECT to_regnamespace('graphile_worker')").fetchone() != (None,)


def test_wfctl_adopts_a_world_the_real_package_made(real_world, run_cli) -> None:
    status, out, _ = run_cli("--dsn", real_world.dsn, "bootstrap")
    assert status == 0 and "adopted" in out
    status, out, _ = run_cli("--dsn", real_world.dsn, "bootstrap")
    assert status == 0 and "nothing to do" in out


def test_the_composed_catalog_is_the_real_one(real_world) -> None:
    """drizzle's table plus each recorded migration's delta (captured from the published files)
    equals the real beta.29 setup's catalog; tests/releases/test_every_release.py proves the
    same for 4.1.1, 4.1.5, 4.2.0, 4.3.0, 4.3.7 and 5.0.0-beta.27."""
    from wfctl.world import drizzle

    with real_world.connect() as real:
        rows = real.execute(
            "SELECT hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
        ).fetchall()
        tags = [drizzle.identify(h, c) for h, c in rows]
        assert tags == [m.tag for m in drizzle.KNOWN]
        assert catalog.diff(drizzle.compose(tags), catalog.describe(real)) == []
