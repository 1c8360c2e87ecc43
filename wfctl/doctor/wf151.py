"""WF151: catalog drift from what the recorded migrations promise, or INVALID indexes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.world import catalog


@dataclass(frozen=True)
class CatalogDriftCheck(Check):
    """Adds the column-by-column catalog comparison, which is Python (catalog.diff)."""

    def extra_findings(self, conn: psycopg.Connection[Any], era: str) -> Iterator[Finding]:
        expected = catalog.expected("slot" if era == "slot" else "beta29")
        for line in catalog.diff(expected, catalog.describe(conn)):
            # Additions are tolerated: later upstream releases add columns and tables
            # (reference §1.4); only what is missing or different breaks the package.
            if line.startswith("unexpected "):
                continue
            yield Finding(self.code, None, line.split(":", 1)[0], None, False, line)


CHECK = CatalogDriftCheck(
    code="WF151",
    title="catalog drift",
    severity=Severity.CRITICAL,
    upstream_rules=("log.unique-event-id", "step.created-once", "wait.created-once"),
    remedy="report only: add what the skipped migrations add (see --explain WF151)",
    explanation=Explanation(
        meaning="The live catalog lacks what the recorded migrations promise (a column, an "
        "index, an index predicate, an enum label), or an index is INVALID.",
        why_stuck="beta.29's inserts and RETURNING clauses name those columns, so such a world "
        "fails on every run creation; an INVALID index is a half-built key swap.",
        cause="drizzle applies a migration only when its journal `when` exceeds the newest "
        "recorded one: a 4.3.7 -> beta.29 upgrade records 0015 first and then silently skips "
        "0011-0014. An INVALID index is left by an interrupted CREATE INDEX CONCURRENTLY.",
        repair="Manual: add the missing columns/indexes as the skipped migrations define them "
        "(`wfctl info` lists each difference); drop an INVALID index concurrently, or rerun "
        "`wfctl migrate --online`, which rebuilds it.",
    ),
)
