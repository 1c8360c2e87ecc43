"""WF123: broken slot numbering (holes, slot 1 not run_created, non-slot bodies)."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF123",
    title="slot numbering broken",
    severity=Severity.CRITICAL,
    upstream_rules=("log.monotonic-order", "run.created-first"),
    remedy="wfctl repair --only WF123 --allow-rewrite renumbers into dense slots",
    explanation=Explanation(
        meaning="A marked run's evnt_ ids are not the dense sequence 1..n with run_created at "
        "slot 1, or an evnt_ id's body is not a valid slot. A noop event (spec 7 filler) holds "
        "its position: it is not a hole.",
        why_stuck="The runtime refuses logs with holes ('A gap in the numbering fails the "
        "run'), and a foreign event at slot 1 cannot start a replay.",
        cause="A deleted duplicate (an earlier bad repair), a crash between marker and "
        "run_created, or a hand edit.",
        repair="Only with --allow-rewrite, quiescent runs only. Holes alone, at spec >= 7: "
        "a noop filler at each missing position (the sealed log's own filler; no id moves). "
        "Below spec 7, or with slot 1 not run_created or a non-slot body: renumber into dense "
        "positions, run_created first (rebuilt from the run row when the log has none).",
    ),
    needs=frozenset({Needs.SLOTS}),
)
