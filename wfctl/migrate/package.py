"""An installed `@workflow/world-postgres` folder: its journal, migration files and hashes.

drizzle's migrator (reference §1.6) reads `src/drizzle/migrations/meta/_journal.json`, hashes
each `<tag>.sql` (SHA-256 of the file's text) and applies, in one transaction, every entry
whose journal `when` exceeds the largest `created_at` recorded in
`workflow_drizzle.workflow_migrations`. This module reads the same facts, so wfctl can say
what is pending and record a migration exactly as the migrator would.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wfctl.errors import RefusedError, UsageError
from wfctl.migrate import recognise
from wfctl.world import drizzle

MIGRATIONS_SUBDIR = Path("src") / "drizzle" / "migrations"
JOURNAL = Path("meta") / "_journal.json"
BREAKPOINT = "--> statement-breakpoint"


@dataclass(frozen=True)
class Entry:
    """One journal entry: drizzle's `tag` (the file name without .sql) and `when`."""

    idx: int
    tag: str
    when: int


@dataclass(frozen=True)
class Migration:
    """One migration file as drizzle sees it."""

    tag: str
    when: int
    path: Path
    text: str
    sha256: str

    def chunks(self) -> list[str]:
        """The statements drizzle sends, one per `--> statement-breakpoint` chunk."""
        return [c for c in self.text.split(BREAKPOINT) if c.strip()]

    def analyse(self) -> recognise.Analysis:
        return recognise.analyse(self.tag, self.chunks())


@dataclass
class Package:
    """A package folder (or its migrations folder) with a readable journal."""

    root: Path
    folder: Path
    name: str | None
    version: str | None
    entries: list[Entry] = field(default_factory=list)

    @property
    def label(self) -> str:
        what = f"{self.name or 'package'} {self.version or '(version unknown)'}"
        return f"{what} at {self.root}"

    def migration(self, entry: Entry) -> Migration:
        """Read one entry's file; refuse when it is missing (drizzle would fail too)."""
        path = self.folder / f"{entry.tag}.sql"
        try:
            raw = path.read_bytes()
        except OSError:
            raise RefusedError(
                f"the journal of {self.root} names {entry.tag} but {path} cannot be read",
                hint="point --package at a complete installed @workflow/world-postgres folder",
            ) from None
        # drizzle hashes the file decoded as UTF-8 and re-encoded (Node's default).
        text = raw.decode("utf-8", errors="replace")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return Migration(entry.tag, entry.when, path, text, digest)

    def pending(self, max_created_at: int | None) -> list[Entry]:
        """Entries drizzle would apply now: `when` > max(created_at), in journal order."""
        floor = -1 if max_created_at is None else max_created_at
        return [e for e in self.entries if e.when > floor]

    def by_record(self, hash_: str, created_at: int | None) -> Entry | None:
        """The entry a recorded row stands for (same `when`; hashes are checked by callers)."""
        for e in self.entries:
            if e.when == created_at:
                return e
        return None


PACKAGE_NAME = "@workflow/world-postgres"


def locate(directory: Path) -> Package:
    """The installed @workflow/world-postgres in `directory`, whatever its release line.

    `directory` may be the package itself, an app holding it in `node_modules/`, or its
    migrations folder. Refuses (usage, nothing read from the database) a folder that holds
    no such package or another package, so the road never runs another package's SQL.
    """
    base = directory.expanduser()
    if not base.is_dir():
        raise UsageError(
            f"--package {directory}: not a directory",
            hint="give the installed package, e.g. node_modules/@workflow/world-postgres",
        )
    own, _ = _package_json(base)
    nested = base / "node_modules" / "@workflow" / "world-postgres"
    if own == PACKAGE_NAME or (own is None and (base / JOURNAL).is_file()):
        return _read(directory, base)
    if _package_json(nested)[0] == PACKAGE_NAME:
        return _read(directory, nested)
    if own is not None:
        raise UsageError(
            f"--package {directory}: holds {own}, not {PACKAGE_NAME} (nor has it in "
            "node_modules/@workflow/world-postgres)",
            hint="give the installed package, e.g. node_modules/@workflow/world-postgres",
        )
    raise UsageError(
        f"--package {directory}: holds no {PACKAGE_NAME} (no {MIGRATIONS_SUBDIR / JOURNAL} in "
        "it, nor a node_modules/@workflow/world-postgres)",
        hint="give the installed package, e.g. node_modules/@workflow/world-postgres",
    )


def load(directory: Path) -> Package:
    """Read a beta.29-line package folder (the slot-era swap); accepts the package root or its
    migrations folder itself."""
    package = locate(directory)
    _check_beta29_prefix(package)
    return package


def _read(directory: Path, root: Path) -> Package:
    """The journal of the package at `root` (or of `root` itself, a migrations folder)."""
    if not root.is_dir():
        raise UsageError(
            f"--package {directory}: not a directory",
            hint="give the installed package, e.g. node_modules/@workflow/world-postgres",
        )
    folder = root / MIGRATIONS_SUBDIR
    if not (folder / JOURNAL).is_file() and (root / JOURNAL).is_file():
        folder = root
    journal_path = folder / JOURNAL
    if not journal_path.is_file():
        raise UsageError(
            f"--package {directory}: no {MIGRATIONS_SUBDIR / JOURNAL} in it",
            hint="give the installed package, e.g. node_modules/@workflow/world-postgres",
        )
    try:
        journal = json.loads(journal_path.read_text(encoding="utf-8"))
        entries = [
            Entry(int(e.get("idx", i)), str(e["tag"]), int(e["when"]))
            for i, e in enumerate(journal["entries"])
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"--package {directory}: unreadable journal {journal_path}: {exc}",
            hint="is this an installed @workflow/world-postgres folder?",
        ) from None
    name, version = _package_json(root)
    return Package(root=root, folder=folder, name=name, version=version, entries=entries)


def _package_json(root: Path) -> tuple[str | None, str | None]:
    path = root / "package.json"
    if not path.is_file():
        return None, None
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    name, version = data.get("name"), data.get("version")
    return (name if isinstance(name, str) else None, version if isinstance(version, str) else None)


def beta_line(package: Package) -> bool:
    """Whether the journal starts with beta.29's 0000-0017 (the line the slot-era swap knows)."""
    known = drizzle.BETA29
    head = [(e.tag, e.when) for e in package.entries[: len(known)]]
    return head == [(m.tag, m.when) for m in known]


def _check_beta29_prefix(package: Package) -> None:
    """The journal must start with beta.29's 0000-0017, `when` for `when`: same package line."""
    known = drizzle.BETA29
    head = package.entries[: len(known)]
    for i, m in enumerate(known):
        if i >= len(head) or (head[i].tag, head[i].when) != (m.tag, m.when):
            found = f"{head[i].tag} (when {head[i].when})" if i < len(head) else "nothing"
            raise RefusedError(
                f"{package.label}: journal entry {i} is {found}, expected {m.tag} "
                f"(when {m.when}) as in beta.29",
                hint="wfctl knows the 5.0.0-beta line only; this folder is another package line",
            )
