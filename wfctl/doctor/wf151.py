"""WF151: catalog drift from what the recorded migrations promise, or INVALID indexes.

One code, three weights (per finding): a required object missing or changed is critical; an
addition a known newer upstream migration makes is info (named with its migration); any other
addition is a warning naming the object. Comparison is by meaning (wfctl.world.catalog.compare),
so a world moved with pg_dump/restore, whose index predicate prints differently, is not drift.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.world import catalog
from wfctl.world.releases import Release, later_objects


class CatalogDriftCheck(Check):
    """Adds the column-by-column catalog comparison, which is Python (catalog.compare)."""

    def extra_findings(self, conn: psycopg.Connection[Any], release: Release) -> Iterator[Finding]:
        later = later_objects(release)
        found = catalog.compare(conn, release.expected_catalog)
        prepared = any(d.change == "unexpected" and d.name == PREPARED_KEY_INDEX for d in found)
        if prepared and _prepared_key_index(conn):  # `migrate --online` built it; 0019 adopts it
            found = [d for d in found if d.name != PREPARED_KEY_INDEX]
        for d in found:
            if d.known:
                severity, detail = Severity.INFO, f"{d.text} (added by upstream {d.known})"
            elif d.change == "unexpected" and (d.kind, d.name) in later:
                severity = Severity.INFO
                detail = f"{d.text} (made by a later release: {later[(d.kind, d.name)]})"
            elif d.change == "order":  # ADD COLUMN appends; only a table rewrite reorders
                severity = Severity.INFO
                detail = f"{d.text} (harmless: the package names every column it reads and writes)"
            elif d.change == "unexpected":
                detail = f"{d.text}: not made by any @workflow/world-postgres migration wfctl knows"
                severity = Severity.WARNING
            else:
                severity, detail = Severity.CRITICAL, d.text
            yield Finding(self.code, None, f"{d.kind} {d.name}", None, False, detail, severity)


# What `wfctl migrate --online` (prepare) leaves: the run-scoped key's unique index, built
# concurrently, which the package's 0019 migration adopts as its key. Valid and exactly that
# index, it is wfctl's own expected state, not drift (an INVALID one stays critical).
PREPARED_KEY_INDEX = "workflow.workflow_events:workflow_events_run_id_id_idx"


def _prepared_key_index(conn: psycopg.Connection[Any]) -> bool:
    """Whether the index `migrate --online` builds is there, valid, UNIQUE (run_id, id)."""
    from wfctl.migrate import state  # catalog reads only

    return state.read(conn).key_index_ok


CHECK = CatalogDriftCheck(
    code="WF151",
    title="catalog drift",
    severity=Severity.CRITICAL,
    upstream_rules=("log.unique-event-id", "step.created-once", "wait.created-once"),
    needs_known_world=True,
    remedy="report only: add what the skipped migrations add (see --explain WF151)",
    explanation=Explanation(
        meaning="Compared with the catalog the migrations the world records promise: drizzle's "
        "table plus each recorded migration's effect, captured from the published packages' "
        "own files (docs/releases.md); the slot era's is kept as data. "
        "The live catalog lacks what the recorded migrations promise (a column, an "
        "index, an index predicate, an enum label), or an index is INVALID (critical). "
        "Objects a newer upstream migration adds (0018-0027: hook token retention, event "
        "slots, keyed stream append, invocations, resume ids, claimed_from, seq_in_band, "
        "timestamptz columns, snapshots) are info; any other addition is a warning naming it. "
        "Columns in another order than a fresh world's (migrations applied out of journal "
        "order, as `migrate --online` finishing a world the package's migrator left short) are "
        "info. The valid UNIQUE (run_id, id) index `wfctl migrate --online` builds is not drift. "
        "Index predicates are compared by meaning, so a restored world is not drift.",
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
