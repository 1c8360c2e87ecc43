"""The package's drizzle migrations as data: the edges of the release graph.

drizzle records each applied migration as (hash = SHA-256 of the .sql file, created_at =
the journal `when`) and applies a migration iff its `when` exceeds max(created_at). Keeping
these facts lets `wfctl bootstrap` record rows that make the package's own migrator a no-op,
lets `wfctl info` name what a world has recorded, and lets a world's expected catalog be
composed from the migrations it records (`compose`): the drizzle table's own catalog plus
each migration's catalog delta, in journal order.

Generated, never hand-typed: `benchmarks/release_data.py` reads every published
`@workflow/world-postgres` (npm pack: `src/drizzle/migrations`, `meta/_journal.json`) and
applies each file on a scratch database to capture its delta into
`wfctl/data/migrations.json`. A tag's file is byte-identical in every release that ships it,
except 0000 in 4.1.0-beta.15 (no trailing newline: another hash, the same migration).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wfctl.world import catalog

DATA = Path(__file__).resolve().parent.parent / "data" / "migrations.json"
Catalog = catalog.Catalog


@dataclass(frozen=True)
class DrizzleMigration:
    tag: str
    when: int
    sha256: str
    # Other files published under this tag: {sha256: [versions shipping it]}.
    other_files: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def number(self) -> int:
        return int(self.tag[:4])

    @property
    def hashes(self) -> tuple[str, ...]:
        return (self.sha256, *(h for h, _ in self.other_files))

    @property
    def delta(self) -> dict[str, Any]:
        """What it does to the catalog (`delta` format), captured from the real file."""
        result: dict[str, Any] = _data()["deltas"][self.tag]
        return result

    def adds(self) -> list[str]:
        """What it changes, in words: `column workflow_runs.error_code`, `enums -> workflow`."""
        return catalog.describe_delta(self.delta)


@functools.cache
def _data() -> dict[str, Any]:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    return {
        "base": raw["base"],
        "deltas": {m["tag"]: m["catalog"] for m in raw["migrations"]},
        "migrations": tuple(
            DrizzleMigration(
                m["tag"],
                m["when"],
                m["sha256"],
                tuple((h, tuple(vs)) for h, vs in sorted(m["other_files"].items())),
            )
            for m in raw["migrations"]
        ),
    }


# Every migration any published release records, in journal order (0000-0017).
KNOWN: tuple[DrizzleMigration, ...] = _data()["migrations"]
# beta.29's journal is every known migration (the name predates the other releases' data).
BETA29 = KNOWN
BY_TAG = {m.tag: m for m in KNOWN}
BY_WHEN = {m.when: m for m in KNOWN}
BY_HASH = {h: m for m in KNOWN for h in m.hashes}
LATEST_KNOWN_WHEN = KNOWN[-1].when


def identify(hash_: str, created_at: int | None) -> str:
    """Name a recorded migration row: its tag when known, else `unknown(<when>)`."""
    known = BY_HASH.get(hash_) or (BY_WHEN.get(created_at) if created_at is not None else None)
    return known.tag if known else f"unknown({created_at})"


def compose(tags: Iterable[str]) -> Catalog:
    """The catalog a world recording exactly `tags` has: drizzle's table, then each
    migration's delta in journal order (the order drizzle applied them)."""
    out: Catalog = copy.deepcopy(_data()["base"])
    for m in sorted((BY_TAG[t] for t in tags), key=lambda m: m.when):
        catalog.apply_delta(out, m.delta)
    return out


def span(tags: Iterable[str]) -> str:
    """`0000-0010 + 0015`: a journal in few characters."""
    numbers = sorted(BY_TAG[t].number if t in BY_TAG else -1 for t in tags)
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [f"{r[0]:04d}" if len(r) == 1 else f"{r[0]:04d}-{r[-1]:04d}" for r in runs]
    return " + ".join(parts) or "none"
