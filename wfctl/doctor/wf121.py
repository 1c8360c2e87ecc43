"""WF121: half-created run (no slot marker in the slot era, or no run_created)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF121",
    title="half-created run",
    severity=Severity.CRITICAL,
    upstream_rules=("run.created-first",),
    remedy="wfctl repair --only WF121 writes the marker and run_created at slot 1 "
    "(--allow-rewrite when the run's other events must be renumbered behind it)",
    explanation=Explanation(
        meaning="A run row whose creation did not land whole: in the slot era a run without its "
        "workflow_event_slots marker (spec >= 6 or with evnt_ events), or any run whose log has "
        "no run_created event.",
        why_stuck="Without the marker, the next writer mints a wevt_ id into a slot run (WF122) "
        "and every later slot allocation fails; without run_created the runtime cannot rebuild "
        "the run's input. If its job was lost too, the run sits pending with no events.",
        cause="Run creation is several autocommits (run row, marker, run_created) in upstream "
        "beta.29 and beta.34-beta.40 (upstream vercel/workflow#3656).",
        repair="One transaction: lock the run row, re-check, and decide from the evidence what "
        "the run was meant to be. A slot run (it has a marker, an evnt_ event, or spec >= 6, "
        "which the runtime reads as slots whatever the world did) gets its marker "
        "(seq_in_band 1 where that column exists) and run_created at slot 1 rebuilt from the "
        "row (deploymentId, workflowName, input, executionContext, attributes, "
        "encryptionPublicKey); its other events, if any, are renumbered behind it, only with "
        "--allow-rewrite (see 'Slot-log rewrites'). Any other run is legacy: run_created gets "
        "a wevt_ id before its first event (drawn at random from the 2^64 ids below it: the "
        "package mints +1 within a millisecond, so first - 1 is often another run's event) "
        "and no marker, so world and runtime both read it as legacy.",
    ),
    sql_by_era={"beta29": "checks/WF121.beta29"},
)
