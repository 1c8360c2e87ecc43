"""WF154: a completed run's row lacks the output its run_completed carries.

The SQL selects completed runs without output, with their run_completed payloads; Python
decodes the first one (CBOR) and reports the run when it carries an output.
"""

from __future__ import annotations

from typing import Any

import cbor2

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.world import codec


def completed_output(payloads: list[bytes | None]) -> Any:
    """The output of the run's first run_completed (upstream reads the first), or None when
    it carries none (absent or CBOR undefined: a workflow that returned nothing)."""
    data = codec.decode(payloads[0]) if payloads else None
    value = data.get("output") if isinstance(data, dict) else None
    return None if value is cbor2.undefined else value


class OutputCheck(Check):
    """Decodes the run_completed payload; a run whose event carries no output holds."""

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        run_id, entity_id, observed_at, in_flight, _, payloads = row
        output = completed_output(payloads)
        if output is None:
            return None
        detail = f"completed run has no output; its run_completed carries {codec.describe(output)}"
        return Finding(self.code, run_id, entity_id, observed_at, in_flight, detail)


CHECK = OutputCheck(
    code="WF154",
    title="completed run lost its output",
    severity=Severity.WARNING,
    upstream_rules=("run.output-materialized",),
    remedy="wfctl repair --all --apply --only WF154 (the row takes run_completed's output)",
    explanation=Explanation(
        meaning="A completed run's row has no output (output_cbor and the legacy output both "
        "NULL) while its run_completed event carries one. A run_completed without output "
        "(a workflow that returns nothing) is fine. Completed runs are outside the default "
        "live scope: --all, --run, --since or --incremental look at them.",
        why_stuck="Not stuck, the run is over; but whoever reads its result reads the row: "
        "core's run.returnValue takes runs.get's output, so a caller or a parent workflow "
        "gets undefined instead of the value.",
        cause="The package's run_completed sets status and output in one UPDATE, so it never "
        "writes this; a hand edit, a partial restore or a foreign tool that completed the row "
        "without its output does.",
        repair="Copies the output bytes of the run's first run_completed into the row "
        "(output_cbor), under the run row lock, after re-checking, only while the row still "
        "has none: the event is the one record of the value. No event is written.",
    ),
)
