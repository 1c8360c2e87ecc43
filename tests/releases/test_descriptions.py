"""The release graph itself (no database): migrations, journals, candidates, worst cases."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from wfctl.doctor import registry
from wfctl.doctor.support import check_support
from wfctl.errors import UsageError
from wfctl.severity import Severity
from wfctl.world import catalog, drizzle, releases

WFCTL = Path(__file__).resolve().parent.parent.parent / "wfctl"
TAGS = [m.tag for m in drizzle.KNOWN]


def test_every_line_has_its_catalog_and_a_known_journal() -> None:
    for release in releases.RELEASES.values():
        assert release.expected_catalog["tables"]
        assert release.journal[0] == "0000_cultured_the_anarchist"
        assert all(t in drizzle.BY_TAG for t in release.journal)


def test_every_published_version_is_described() -> None:
    """Each version has a journal of known migrations, a line and runtime facts."""
    assert "4.3.7" in releases.PACKAGES and "5.0.0-beta.29" in releases.PACKAGES
    for version, package in releases.PACKAGES.items():
        assert all(t in drizzle.BY_TAG for t in package.journal), version
        assert version in releases.LINE_OF, version
        assert releases.runtime(version) is not None, version


def test_a_journal_names_its_candidates() -> None:
    assert releases.by_journal(TAGS[:10]) == ("4.1.0-beta.46", "4.1.1")
    assert releases.by_journal(TAGS[:11]) == ("4.1.4", "4.1.5", "4.2.0")
    assert releases.by_journal([*TAGS[:11], TAGS[15]]) == ("4.3.0", "4.3.6", "4.3.7")
    assert releases.by_journal(TAGS[:16]) == ("5.0.0-beta.27",)
    assert releases.by_journal(TAGS) == ("5.0.0-beta.29",)
    assert releases.describe_journal(TAGS[:11]) == "4.1.4, 4.1.5 or 4.2.0: journal 0000-0010"
    assert releases.describe_journal([*TAGS[:11], TAGS[15]]).endswith("0000-0010 + 0015")


def test_lines_keep_their_era_keys() -> None:
    assert set(releases.RELEASES) >= {"4.1", "4.3", "beta29", "slot", "4.2", "beta27"}
    assert releases.get("4.1") is releases.R41 and releases.get("beta29") is releases.BETA29


def test_the_composed_catalog_is_the_kept_beta29_one() -> None:
    """The kept beta.29 catalog (what `wfctl bootstrap` makes) is the composition of 0000-0017."""
    assert catalog.diff(catalog.expected("beta29"), drizzle.compose(TAGS)) == []


def test_what_a_journal_lacks_follows_from_its_migrations() -> None:
    assert releases.R42.lacks == releases.OPTIONAL_COLUMNS
    assert releases.BETA27.lacks == {
        "workflow_runs.encryption_public_key",
        "workflow_hooks.resume_context",
    }
    assert releases.BETA29.lacks == frozenset()
    assert "public.status" in releases.R42.expected_catalog["enums"]
    assert "workflow.status" in releases.R43.expected_catalog["enums"]


def test_migrations_say_what_they_add() -> None:
    assert drizzle.BY_TAG["0013_add_attributes"].adds() == ["column workflow_runs.attributes"]
    assert (
        drizzle.BY_TAG["0015_move_enums_to_workflow_schema"]
        .adds()[0]
        .startswith("enums status, step_status, wait_status: public -> workflow")
    )
    # 4.1.0-beta.15 shipped 0000 without its trailing newline: another hash, same migration.
    zero = drizzle.BY_TAG["0000_cultured_the_anarchist"]
    assert len(zero.hashes) == 2 and drizzle.identify(zero.hashes[1], None) == zero.tag


def test_worst_case_among_candidates() -> None:
    """4.3.0 writes step_created outside a transaction, 4.3.7 inside: the 4.3 line takes the
    fewest atomic writes, and names the candidates."""
    assert releases.R43.candidates == ("4.3.0", "4.3.6", "4.3.7")
    assert releases.R43.worst_case and releases.R43.transactional == {"step_started"}
    one = releases.of_version("4.3.7")
    assert not one.worst_case and "run_created" in (one.transactional or ())
    assert releases.R42.severity("WF103").severity is Severity.CRITICAL  # type: ignore[union-attr]
    assert releases.R42.package == "4.1.4, 4.1.5 or 4.2.0"
    assert releases.BETA27.task_suffixes == ("flows", "steps")
    assert releases.BETA29.task_suffixes == ("flows",)


def test_shapes_keep_only_what_the_replay_reads() -> None:
    full = {"stepName": "s", "result": b"x", "workflowName": "w"}
    assert releases.R41.shape("step_completed", full) == {"result": b"x"}
    assert releases.R43.shape("step_completed", full) == {"stepName": "s", "result": b"x"}
    assert releases.BETA29.shape("step_completed", full) == full
    assert releases.R41.shape("wait_completed", {"resumeAt": 1}) is None
    assert releases.R41.shape("run_failed", {"error": b"e", "errorCode": "X"}) == {"error": b"e"}


def test_checks_needing_a_missing_column_are_not_applicable() -> None:
    wf149 = registry.BY_CODE["WF149"]
    assert check_support(wf149, releases.R43)[0] is False
    assert check_support(wf149, releases.R42)[0] is False
    assert check_support(wf149, releases.BETA27)[0] is True
    assert check_support(wf149, releases.BETA29)[0] is True
    assert check_support(registry.BY_CODE["WF131"], releases.R41)[0] is False
    assert check_support(registry.BY_CODE["WF122"], releases.R41)[0] is False
    applies, how = check_support(registry.BY_CODE["WF103"], releases.R41)
    assert applies and how.startswith("critical")


def test_later_releases_objects_are_known_on_a_hand_upgraded_world() -> None:
    later = releases.later_objects(releases.R43)
    assert later[("column", "workflow.workflow_runs.error_code")].endswith("5.0.0-beta.29")
    assert ("column", "workflow.workflow_hooks.is_system") in later
    assert releases.later_objects(releases.BETA29) == {}


def test_only_4x_and_beta27_refuse_new_runs() -> None:
    for release in (releases.R41, releases.R42, releases.R43, releases.BETA27):
        assert "new runs" in release.refuses
    assert not releases.BETA29.refuses and not releases.SLOT.refuses


def test_wakeup_knows_wfctls_own_deployment() -> None:
    from wfctl.ops import wakeup
    from wfctl.runtime.store import DEPLOYMENT_ID

    assert wakeup.WFCTL_DEPLOYMENT == DEPLOYMENT_ID
    assert releases.BETA29.wakes_package_runs and releases.R41.wakes_package_runs
    assert not releases.SLOT.wakes_package_runs


def test_versions_order_as_semver() -> None:
    order = ["4.1.0-beta.15", "4.1.0-beta.46", "4.1.1", "4.3.7", "5.0.0-beta.27", "5.0.0-beta.29"]
    assert sorted(reversed(order), key=releases.version_key) == order
    assert list(releases.PACKAGES) == sorted(releases.PACKAGES, key=releases.version_key)


def test_a_pinned_package_folder_names_its_version(tmp_path, monkeypatch) -> None:
    for var in ("WFCTL_PACKAGE_VERSION", "WFCTL_PACKAGE"):
        monkeypatch.delenv(var, raising=False)
    assert releases.pinned_version() is None
    assert releases.pinned_version("4.2.0") == "4.2.0"
    (tmp_path / "package.json").write_text(
        json.dumps({"name": "@workflow/world-postgres", "version": "4.1.5"})
    )
    assert releases.pinned_version(str(tmp_path)) == "4.1.5"
    monkeypatch.setenv("WFCTL_PACKAGE", str(tmp_path))
    assert releases.pinned_version() == "4.1.5"
    (tmp_path / "package.json").write_text(json.dumps({"name": "left-pad", "version": "1.0.0"}))
    with pytest.raises(UsageError):
        releases.pinned_version(str(tmp_path))
    with pytest.raises(UsageError):
        releases.pinned_version(str(tmp_path / "nowhere"))


def test_the_world_layer_imports_no_command_or_check() -> None:
    """Layers point down: wfctl/world knows neither the doctor nor the CLI."""
    upward = re.compile(r"^\s*(from|import) wfctl\.(doctor|cli|repair)\b", re.M)
    offenders = [p.name for p in (WFCTL / "world").glob("*.py") if upward.search(p.read_text())]
    assert offenders == []


def _script(name: str):  # type: ignore[no-untyped-def]
    path = WFCTL.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_releases_doc_is_generated_from_the_descriptions() -> None:
    """docs/releases.md's tables come from the descriptions: `python
    benchmarks/releases_doc.py` regenerates it."""
    doc = _script("releases_doc")
    assert doc.OUTPUT.read_text(encoding="utf-8") == doc.render()
