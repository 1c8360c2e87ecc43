"""WF149: a run's attributes differ from the fold of its log (run_created + attr_set).

The SQL selects the runs that have any attribute at all, with their run_created and attr_set
payloads in log order; the fold and the comparison are Python, because the payloads are CBOR.
"""

from __future__ import annotations

from typing import Any

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.world import codec


def fold(types: list[str], payloads: list[bytes | None]) -> dict[str, str]:
    """The attributes the log implies: run_created's map, then each attr_set's changes in
    order (a null value deletes the key), as the package materialises them on the row."""
    attributes: dict[str, str] = {}
    for kind, payload in zip(types, payloads, strict=True):
        data = codec.decode(payload)
        if not isinstance(data, dict):
            continue
        if kind == "run_created":
            initial = data.get("attributes")
            if isinstance(initial, dict):
                attributes.update({str(k): v for k, v in initial.items()})
        else:
            for change in data.get("changes") or ():
                if not isinstance(change, dict) or "key" not in change:
                    continue
                if change.get("value") is None:
                    attributes.pop(str(change["key"]), None)
                else:
                    attributes[str(change["key"])] = change["value"]
    return attributes


def differences(row: dict[str, Any], log: dict[str, Any]) -> list[str]:
    """Per key, how row and log disagree ("k: 'a' on the row, absent by the log")."""
    out = []
    for key in sorted(set(row) | set(log)):
        if row.get(key) != log.get(key):
            on_row = repr(row[key]) if key in row else "absent"
            by_log = repr(log[key]) if key in log else "absent"
            out.append(f"{key!r}: {on_row} on the row, {by_log} by the log")
    return out


class AttributesCheck(Check):
    """Decodes and folds the candidates' payloads; a run whose row equals the fold holds."""

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        run_id, entity_id, observed_at, in_flight, _, attributes, types, payloads = row
        diff = differences(attributes or {}, fold(types, payloads))
        if not diff:
            return None
        more = f" (+{len(diff) - 3} more)" if len(diff) > 3 else ""
        detail = "attributes differ from the log: " + "; ".join(diff[:3]) + more
        return Finding(self.code, run_id, entity_id, observed_at, in_flight, detail)


CHECK = AttributesCheck(
    code="WF149",
    title="run attributes differ from the log",
    severity=Severity.WARNING,
    upstream_rules=("run.attributes-match-log",),
    needs_columns=frozenset({"workflow_runs.attributes"}),
    remedy="wfctl repair --apply --only WF149 (the row is set to the log's fold)",
    explanation=Explanation(
        meaning="workflow_runs.attributes is not what the run's log folds to: run_created's "
        "attributes, then every attr_set's changes in log order (a null value deletes).",
        why_stuck="Not stuck: replay reads the attr_set events, so the workflow is unaffected; "
        "runs.get/list, dashboards and attribute filters show keys the history never set "
        "(or miss ones it did), and the package counts the row's keys against the per-run "
        "attribute cap.",
        cause="beta.29 writes attr_set as separate autocommits: UPDATE the run's attributes, "
        "then insert the event. A crash or a failed insert between them leaves the row ahead "
        "of the log. A redelivery of the same workflow write heals it (the update is "
        "idempotent, the event lands); a run that ended first (cancelled, failed) keeps it. "
        "A hand edit of the row does the same.",
        repair="Sets the row's attributes to the log's fold, under the run row lock, after "
        "re-checking: the log is what the runtime replays and what a redelivered write "
        "re-applies, so it is the side that is right. No event is written.",
    ),
)
