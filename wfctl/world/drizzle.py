"""The package's drizzle migrations as data: tag, journal `when`, SHA-256 of the file.

drizzle records each applied migration as (hash = SHA-256 of the .sql file, created_at =
the journal `when`) and applies a migration iff its `when` exceeds max(created_at). Keeping
these facts lets `wfctl bootstrap` record rows that make the package's own migrator a no-op,
and lets `wfctl info` name what a world has recorded. Values read from
`@workflow/world-postgres@5.0.0-beta.29` (`src/drizzle/migrations`, `meta/_journal.json`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrizzleMigration:
    tag: str
    when: int
    sha256: str

    @property
    def number(self) -> int:
        return int(self.tag[:4])


BETA29: tuple[DrizzleMigration, ...] = tuple(
    DrizzleMigration(tag, when, sha)
    for tag, when, sha in (
        (
            "0000_cultured_the_anarchist",
            1762873019948,
            "e92421745b2346049a277afbce781da3f260e68067eb1bdbd7d10bbf2ad2e743",
        ),
        (
            "0001_tricky_sersi",
            1763903867386,
            "5bb606a2a55a2095101907d62d28917091316d9cddcdff5e8fc9a43e2e6f7a30",
        ),
        (
            "0002_add_expired_at",
            1764815363008,
            "ac88e448e940f38bf18f076dde2abe63b53659a4c9936325e4e44cf95434e311",
        ),
        (
            "0003_add_stream_run_id",
            1765900000000,
            "ad911e947a121b1def77b7ad37bd95ae7de2b453a05645e9b40f979a166e79b9",
        ),
        (
            "0004_remove_run_pause_status",
            1765900000001,
            "673b7222d0df6c2fd2d335072a9d85b695b5dae4a2c52b287d2aaa5d31d462f9",
        ),
        (
            "0005_add_spec_version",
            1767723210726,
            "7c3f3b73a707af2386f5c20b953e4c54631be616bf0b9bfa8ced1b97018ad384",
        ),
        (
            "0006_add_error_cbor",
            1768500000000,
            "928760bfbdd23576f119f3f14c3e6db78fb765cfd24f8595c70536cb975c7178",
        ),
        (
            "0007_add_waits_table",
            1769500000000,
            "f904ecb9232a269f599b393fa4ce5e3762a8267d111ad103d56fdcd11837fdcd",
        ),
        (
            "0008_migrate_pgboss_to_graphile",
            1770000000000,
            "e424a48df5a1ddd752e4d09f05696e76da94e366b3d617ca10c3d3fbcdb74c77",
        ),
        (
            "0009_add_is_webhook",
            1770500000000,
            "eafc36b3c9b1aaff44cd33cff9126bd7fdd796d2672b104125c32d91e0ce5597",
        ),
        (
            "0010_add_events_entity_creation_unique_index",
            1771000000000,
            "5584c9be57e2c0d82fa1e972d5ee5da711b31368fbf8efee16cd2857e071af41",
        ),
        (
            "0011_add_error_code",
            1771500000000,
            "169d2d8dea24763593830768249a1832b951a8a456f3757a2a2aa08063b41f6b",
        ),
        (
            "0012_add_is_system",
            1775600000000,
            "31308216105f22820ff834667fd3c34cc53939deeff5f56d9865f77a5579105d",
        ),
        (
            "0013_add_attributes",
            1779609600000,
            "f22c7907d5cbfcf8e85801490677aae0fa9212fca01ad5a27aec0f8742cb2be7",
        ),
        (
            "0014_add_attr_set_event_unique_index",
            1780185600000,
            "f09414bc7166d782e8c93f6d65e3b16493b56911b1a241356b382f7e6008439f",
        ),
        (
            "0015_move_enums_to_workflow_schema",
            1782691200000,
            "adc88e08a9a0bba0bd13962db0c317b4e4aab4c6ae6ec281f2453dee9e4199c7",
        ),
        (
            "0016_add_encryption_public_key",
            1784937600000,
            "f54db91ba1d89a06bfa1dcd6f869dfe419b94fc54b0329052e2a18e314ee5a82",
        ),
        (
            "0017_add_hook_resume_context",
            1785283200000,
            "4ce073262fcb6bb23919f5c57df2bd513b95bff75d104a0c9131840eca6e4846",
        ),
    )
)
BY_WHEN = {m.when: m for m in BETA29}
BY_HASH = {m.sha256: m for m in BETA29}
LATEST_KNOWN_WHEN = BETA29[-1].when


def identify(hash_: str, created_at: int | None) -> str:
    """Name a recorded migration row: its tag when known, else `unknown(<when>)`."""
    known = BY_HASH.get(hash_) or (BY_WHEN.get(created_at) if created_at is not None else None)
    return known.tag if known else f"unknown({created_at})"
