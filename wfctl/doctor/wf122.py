"""WF122: legacy wevt_ event ids inside a slot-numbered run."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF122",
    title="wevt_ ids in a slot-numbered run",
    severity=Severity.CRITICAL,
    upstream_rules=("log.monotonic-order",),
    remedy="wfctl repair --only WF122 --allow-rewrite renumbers the run once it is quiescent",
    explanation=Explanation(
        meaning="A run that numbers its events by slot (it has a marker) holds wevt_ ULID ids.",
        why_stuck="The slot allocator reads the run's highest id; a wevt_ id sorts above every "
        "evnt_ id, so every later insert fails with 'invalid input syntax for type bigint', and "
        "core >= beta.47 refuses the log ('Event id is not slot-numbered').",
        cause="A writer read the run before its marker committed (upstream "
        "vercel/workflow#3656) and took the legacy "
        "branch.",
        repair="Only with --allow-rewrite, past --min-age, while no queue job of the run is "
        "running: renumber the run's events into dense slots, run_created first, then the "
        "evnt_ events (slot order) and the wevt_ events (id order) merged by created_at. Only "
        "ids change; payload bytes, types, correlation ids and times are kept. The old->new "
        "id map is kept in the audit log (see 'Slot-log rewrites').",
    ),
    needs=frozenset({Needs.SLOTS}),
)
