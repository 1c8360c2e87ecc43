"""What upstream releases after beta.29 add to a world's catalog, known by effect.

Why: a world upgraded by a newer @workflow/world-postgres carries objects beta.29 lacks. They
are not drift: the package put them there. Catalog drift (WF151) must tell three things apart:
- a required object missing or changed: the package's statements fail -> critical;
- an addition a known newer migration makes: expected on such a world -> info, naming the
  migration;
- any other addition: someone else's object in the world's schemas -> a warning naming it.
Migration *files* cannot tell this: drizzle records hashes, not names, and upstream branches
reuse numbers (two 0020s, two 0026s). So additions are recognised by what they create.

Checked against the migration files of vercel/workflow `packages/world-postgres` (0018 hook
token retention, 0019 event slots, 0020 keyed stream append / invocations / dynamic workflow
code, 0021 invocation identity, 0022 invocation outcomes, 0023 hook claimed_from, 0026
seq_in_band and timestamptz, 0027 run job prefix) as read in late 2026; none of them is
installable from the registry here, so this is their text, not a running package.
"""

from __future__ import annotations

import dataclasses

from wfctl.world.catalog import Difference

# What each upstream migration adds, by kind and qualified name. A table listed here is known
# whole: its columns, indexes and sequences are not compared (they are its migrations' own).
ADDED_BY: dict[str, list[tuple[str, str]]] = {
    "0018 hook token retention": [("column", "workflow_hooks.token_retention_until")],
    "0019 event slots": [("table", "workflow_event_slots")],
    "0020 keyed stream append": [
        ("column", "workflow_stream_chunks.idempotency_key"),
        ("column", "workflow_stream_chunks.semantic_digest"),
        ("column", "workflow_stream_chunks.stream_index"),
        ("index", "workflow_stream_chunks:workflow_stream_chunks_keyed_append_idx"),
        ("index", "workflow_stream_chunks:workflow_stream_chunks_keyed_index_idx"),
    ],
    "0020 invocations (0021/0022 extend it)": [
        ("table", "workflow_invocations"),
        ("sequence", "workflow_invocations_sequence_seq"),
    ],
    "0020 dynamic workflow code": [("column", "workflow_runs.dynamic_workflow_code_cbor")],
    "0021 invocation identity": [
        ("column", "workflow_events.resume_id"),
        ("column", "workflow_events.resume_payload_digest"),
        ("index", "workflow_events:workflow_events_hook_resume_unique"),
    ],
    "0023 hook claimed_from": [("column", "workflow_hooks.claimed_from")],
    "0026 seq_in_band": [("column", "workflow_event_slots.seq_in_band")],
    "0026 (workflow_snapshots)": [("table", "workflow_snapshots")],
    "0027 run job prefix": [("column", "workflow_runs.job_prefix")],
}
KNOWN_ADDITIONS: dict[tuple[str, str], str] = {
    (kind, f"workflow.{name}"): migration
    for migration, objects in ADDED_BY.items()
    for kind, name in objects
}

TIMESTAMP = "timestamp without time zone"
TIMESTAMPTZ = "timestamp with time zone"
TIMESTAMPTZ_MIGRATION = "0026 timestamps with time zone"


def classify(difference: Difference) -> Difference:
    """`difference` with `known` set when a newer upstream migration explains it."""
    known = ""
    if difference.change == "unexpected":
        known = KNOWN_ADDITIONS.get((difference.kind, difference.name), "")
    elif difference.change == "changed" and difference.kind == "column":
        # 0026 turns every timestamp into timestamptz; nothing else about the column changes.
        have, want = difference.have, difference.want
        if (
            have is not None
            and want is not None
            and (have[1], want[1]) == (TIMESTAMPTZ, TIMESTAMP)
            and (have[0], *have[2:]) == (want[0], *want[2:])
        ):
            known = TIMESTAMPTZ_MIGRATION
    return dataclasses.replace(difference, known=known) if known else difference
