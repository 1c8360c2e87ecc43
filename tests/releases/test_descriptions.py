"""The release descriptions themselves (no database): shapes, upgrade view, applicability."""

from __future__ import annotations

from wfctl.doctor import registry
from wfctl.world import catalog, releases


def test_every_release_has_its_catalog_and_a_known_journal() -> None:
    for release in releases.RELEASES.values():
        assert catalog.expected(release.catalog)["tables"]
        assert release.journal[0] == "0000_cultured_the_anarchist"
    assert releases.by_journal(list(releases.R41.journal)) is releases.R41
    assert releases.by_journal(list(releases.R43.journal)) is releases.R43
    assert releases.by_journal(list(releases.BETA29.journal)) is None  # recognised by its key


def test_shapes_keep_only_what_the_replay_reads() -> None:
    full = {"stepName": "s", "result": b"x", "workflowName": "w"}
    assert releases.R41.shape("step_completed", full) == {"result": b"x"}
    assert releases.R43.shape("step_completed", full) == {"stepName": "s", "result": b"x"}
    assert releases.BETA29.shape("step_completed", full) == full
    assert releases.R41.shape("wait_completed", {"resumeAt": 1}) is None
    assert releases.R41.shape("run_failed", {"error": b"e", "errorCode": "X"}) == {"error": b"e"}


def test_checks_needing_a_missing_column_are_not_applicable() -> None:
    wf149 = registry.BY_CODE["WF149"]
    assert releases.check_support(wf149, releases.R43)[0] is False
    assert releases.check_support(wf149, releases.BETA29)[0] is True
    assert releases.check_support(registry.BY_CODE["WF131"], releases.R41)[0] is False
    assert releases.check_support(registry.BY_CODE["WF122"], releases.R41)[0] is False
    applies, how = releases.check_support(registry.BY_CODE["WF103"], releases.R41)
    assert applies and how.startswith("critical")


def test_later_releases_objects_are_known_on_a_hand_upgraded_world() -> None:
    later = releases.later_objects(releases.R43)
    assert later[("column", "workflow.workflow_runs.error_code")].endswith("5.0.0-beta.29")
    assert ("column", "workflow.workflow_hooks.is_system") in later
    assert releases.later_objects(releases.BETA29) == {}


def test_only_4x_refuses_new_runs() -> None:
    assert "new runs" in releases.R41.refuses and "new runs" in releases.R43.refuses
    assert not releases.BETA29.refuses and not releases.SLOT.refuses


def test_wakeup_knows_wfctls_own_deployment() -> None:
    from wfctl.ops import wakeup
    from wfctl.runtime.store import DEPLOYMENT_ID

    assert wakeup.WFCTL_DEPLOYMENT == DEPLOYMENT_ID
    assert releases.BETA29.wakes_package_runs and releases.R41.wakes_package_runs
    assert not releases.SLOT.wakes_package_runs
