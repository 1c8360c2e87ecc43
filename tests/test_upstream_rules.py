"""Upstream's consistency-checker rule names: every one of the 25 is covered by a check or
listed with the reason it is not; --explain, the JSON report and docs/checks.md show them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wfctl.doctor.base import UPSTREAM_GAPS, UPSTREAM_RULES, Check, Explanation, Severity
from wfctl.doctor.registry import CHECKS

ROOT = Path(__file__).resolve().parent.parent


def test_every_upstream_rule_is_covered_or_explained() -> None:
    covered = {rule for check in CHECKS for rule in check.upstream_rules}
    assert len(UPSTREAM_RULES) == 25 == len(set(UPSTREAM_RULES))
    assert covered | set(UPSTREAM_GAPS) == set(UPSTREAM_RULES)
    assert not covered & set(UPSTREAM_GAPS)  # a gap that is covered is a stale gap


def test_an_unknown_rule_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown upstream rule"):
        Check("WF999", "x", Severity.INFO, "x", Explanation("", "", "", ""),
              upstream_rules=("hook.token-unique", "hook.tokens-unique"))  # fmt: skip


def test_explain_names_the_rules(run_cli) -> None:
    status, out, _ = run_cli("doctor", "--explain", "WF145")
    assert status == 0
    assert "Upstream rule(s):  hook.no-receive-after-dispose, hook.dispose-once" in out
    status, out, _ = run_cli("doctor", "--explain", "WF133")
    assert "Upstream rule(s):  none" in out


def test_checks_doc_lists_every_rule_per_check_and_the_gaps() -> None:
    doc = (ROOT / "docs" / "checks.md").read_text()
    for check in CHECKS:
        section = doc.split(f"## {check.code} — ")[1].split("\n## ")[0]
        for rule in check.upstream_rules:
            assert f"`{rule}`" in section, (check.code, rule)
    coverage = doc.split("## Upstream's consistency rules")[1]
    for rule in UPSTREAM_RULES:
        assert f"| `{rule}` |" in coverage
    for rule in UPSTREAM_GAPS:
        assert f"- `{rule}`: " in coverage


def test_report_schema_allows_exactly_the_rule_names() -> None:
    schema = json.loads((ROOT / "docs/schemas/doctor-report.v1.json").read_text())
    field = schema["properties"]["checks"]["items"]["properties"]["upstream_rules"]
    assert field["items"]["enum"] == list(UPSTREAM_RULES)
    # additive: a report without the field (older wfctl) still validates
    assert "upstream_rules" not in schema["properties"]["checks"]["items"]["required"]
