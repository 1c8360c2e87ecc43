"""Regenerate wfctl/data/migrations.json and packages.json from the published packages.

Why generated: what wfctl knows of each release (its drizzle journal, each migration's hash
and `when`, what each migration does to the catalog, the package's transaction sites and
queue tasks) must be what the packages hold, never hand-typed. This script `npm pack`s every
published `@workflow/world-postgres` version, reads its `src/drizzle/migrations` and `dist/`,
and applies the migration files one by one on a scratch database of `--dsn`'s server to
capture each migration's catalog delta (what `wfctl.world.drizzle.compose` adds up).

    python benchmarks/release_data.py --dsn postgresql://postgres@/postgres?host=/tmp/pg
    python benchmarks/release_data.py --dsn ... --check   # exit 1 when the data is stale

`--packs DIR` reuses (or keeps) the unpacked tarballs in DIR/<version>/package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wfctl.world import catalog  # noqa: E402

PACKAGE = "@workflow/world-postgres"
DATA = ROOT / "wfctl" / "data"
# drizzle-orm's node-postgres migrator creates its bookkeeping table before any migration
# (pg-core dialect `migrate`, with the package's migrationsSchema/migrationsTable).
DRIZZLE_TABLE = (
    'CREATE SCHEMA IF NOT EXISTS "workflow_drizzle"',
    'CREATE TABLE IF NOT EXISTS "workflow_drizzle"."workflow_migrations" '
    "(id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)",
)
# `<prefix>flows` / `${jobPrefix}steps` in dist/queue.js: the queue's task identifiers.
TASK = re.compile(r"`\$\{(?:job)?[pP]refix\}(\w+)`")
MAX_ATTEMPTS = re.compile(r"maxAttempts:\s*(\d+)")


def versions() -> list[str]:
    out = subprocess.run(
        ["npm", "view", PACKAGE, "versions", "--json"], check=True, capture_output=True, text=True
    ).stdout
    found: list[str] = json.loads(out)
    return found


def unpack(version: str, packs: Path) -> Path:
    """DIR/<version>/package, from `npm pack` (kept: a second run reads the same files)."""
    folder = packs / version
    if (folder / "package" / "package.json").is_file():
        return folder / "package"
    folder.mkdir(parents=True, exist_ok=True)
    name = subprocess.run(
        ["npm", "pack", f"{PACKAGE}@{version}", "--silent"],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    with tarfile.open(folder / name) as tar:
        tar.extractall(folder, filter="data")
    return folder / "package"


def read_package(version: str, root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the version's facts, {tag: (when, sha256, sql text)} of its journal)."""
    manifest = json.loads((root / "package.json").read_text())
    folder = root / "src" / "drizzle" / "migrations"
    journal = json.loads((folder / "meta" / "_journal.json").read_text())["entries"]
    files = {}
    for entry in journal:
        raw = (folder / f"{entry['tag']}.sql").read_bytes()
        files[entry["tag"]] = (entry["when"], hashlib.sha256(raw).hexdigest(), raw.decode())
    in_journal = {f"{e['tag']}.sql" for e in journal}
    storage = (root / "dist" / "storage.js").read_text()
    queue = (root / "dist" / "queue.js").read_text()
    deps = manifest.get("dependencies", {})
    facts = {
        "journal": [e["tag"] for e in journal],
        "files_outside_journal": sorted(
            p.name for p in folder.glob("*.sql") if p.name not in in_journal
        ),
        "bins": sorted(manifest.get("bin") or {}),
        "queue": "graphile-worker" if "graphile-worker" in deps else "pg-boss",
        "tasks": sorted(set(TASK.findall(queue))),
        "max_attempts": sorted({int(n) for n in MAX_ATTEMPTS.findall(queue)}),
        "transaction_sites": storage.count(".transaction("),
        "world": deps.get("@workflow/world"),
    }
    return facts, files


def catalog_deltas(dsn: str, order: list[str], sql_of: dict[str, str]) -> dict[str, Any]:
    """Apply the migrations in `order` one by one on a scratch database; each one's delta."""
    name = f"wfctl_release_data_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    out: dict[str, Any] = {}
    try:
        with psycopg.connect(psycopg.conninfo.make_conninfo(dsn, dbname=name)) as conn:
            for statement in DRIZZLE_TABLE:
                conn.execute(statement)
            conn.commit()
            out["base"] = catalog.describe(conn)
            before = out["base"]
            for tag in order:
                with conn.transaction():  # drizzle runs each migration in one transaction
                    for statement in sql_of[tag].split("--> statement-breakpoint"):
                        if statement.strip():
                            conn.execute(statement.encode())
                after = catalog.describe(conn)
                out[tag] = catalog.delta(before, after)
                before = after
            conn.commit()
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return out


def generate(dsn: str, packs: Path, only: list[str] | None = None) -> tuple[str, str]:
    """The text of migrations.json and packages.json (of `only`, default every published
    version)."""
    packages: dict[str, Any] = {}
    seen: dict[str, dict[str, Any]] = {}
    sql_of: dict[str, str] = {}
    for version in only or versions():
        facts, files = read_package(version, unpack(version, packs))
        packages[version] = facts
        for tag, (when, sha, text) in files.items():
            entry = seen.setdefault(tag, {"when": when, "hashes": {}})
            if entry["when"] != when:
                raise SystemExit(f"{tag}: journal `when` differs across releases")
            entry["hashes"].setdefault(sha, []).append(version)
            sql_of.setdefault(sha, text)
    # The canonical file of a tag is the one most releases ship; others are listed with theirs.
    order = sorted(seen, key=lambda t: seen[t]["when"])
    canonical = {t: max(seen[t]["hashes"], key=lambda h: len(seen[t]["hashes"][h])) for t in order}
    deltas = catalog_deltas(dsn, order, {t: sql_of[canonical[t]] for t in order})
    migrations = {
        "source": f"{PACKAGE} {', '.join(packages)} (npm pack): src/drizzle/migrations",
        "base": deltas["base"],
        "migrations": [
            {
                "tag": tag,
                "when": seen[tag]["when"],
                "sha256": canonical[tag],
                "other_files": {
                    h: vs for h, vs in seen[tag]["hashes"].items() if h != canonical[tag]
                },
                "catalog": deltas[tag],
            }
            for tag in order
        ],
    }
    info = {"source": f"{PACKAGE} (npm pack): package.json, dist/, src/", "versions": packages}
    return _dump(migrations), _dump(info)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True, help="a server where a scratch db may be made")
    parser.add_argument("--packs", type=Path, help="keep/reuse unpacked tarballs here")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        texts = generate(args.dsn, args.packs or Path(tmp))
    stale = []
    for name, text in zip(("migrations.json", "packages.json"), texts, strict=True):
        path = DATA / name
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text)
    print(f"{'stale' if args.check else 'written'}: {', '.join(stale) or 'nothing'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
