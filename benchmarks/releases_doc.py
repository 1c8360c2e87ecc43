"""Generate docs/releases.md from the release descriptions (no database, no network).

The prose lives in benchmarks/releases_prose.md; each `{{name}}` there is a table built here
from wfctl/world/releases.py and wfctl/world/drizzle.py (and so from the generated data in
wfctl/data/). tests/releases/test_descriptions.py checks the committed page equals the output.

    python benchmarks/releases_doc.py            # write docs/releases.md
    python benchmarks/releases_doc.py --check    # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wfctl.severity import Severity  # noqa: E402
from wfctl.world import drizzle, releases  # noqa: E402

PROSE = Path(__file__).resolve().parent / "releases_prose.md"
OUTPUT = ROOT / "docs" / "releases.md"
WEIGHED = ("WF101", "WF103", "WF121")


def _table(head: Sequence[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _range(r: releases.Runtime) -> str:
    return r.low if r.low == r.high else f"{r.low} to {r.high}"


def versions() -> str:
    rows = []
    for v, p in releases.PACKAGES.items():
        rt = releases.runtime(v)
        ids = releases.correlation_ids(v)
        rows.append(
            [
                f"`{v}`",
                f"`{releases.LINE_OF[v]}`",
                drizzle.span(p.journal),
                ", ".join(f"`{b}`" for b in p.bins),
                f"{p.queue}: " + ", ".join(f"`<prefix>{t}`" for t in p.tasks),
                str(p.transaction_sites),
                releases.CORE.get(v, "—"),
                rt.checked if rt else "—",
                f"`{ids.ids.key}`" + (", steps as their own jobs" if ids.step_jobs else "")
                if ids
                else "—",
            ]
        )
    head = ("version", "era", "journal", "setup bins", "queue tasks", "transaction sites",
            "`@workflow/core` its users got", "runtime facts read from",
            "correlation ids (runs in flight)")  # fmt: skip
    return _table(head, rows)


def migrations() -> str:
    rows = []
    for m in drizzle.KNOWN:
        first = next(v for v, p in releases.PACKAGES.items() if m.tag in p.journal)
        others = "; ".join(f"also `{h[:12]}…` ({', '.join(vs)})" for h, vs in m.other_files)
        rows.append(
            [
                f"`{m.tag}`",
                str(m.when),
                f"`{m.sha256[:12]}…`" + (f"; {others}" if others else ""),
                first,
                "; ".join(m.adds()) or "nothing in the catalog (a data migration)",
            ]
        )
    return _table(("migration", "journal `when`", "SHA-256", "first in", "what it does"), rows)


def lines() -> str:
    rows = []
    for key, r in releases.RELEASES.items():
        if key == "slot":
            rows.append(
                [
                    "`slot`",
                    "`workflow_event_slots` + events keyed `(run_id, id)`",
                    r.package,
                    "—",
                    "`workflow.*`",
                ]
            )
            continue
        enums = "`public.*`" if "public.status" in r.expected_catalog["enums"] else "`workflow.*`"
        journals = sorted(
            {releases.PACKAGES[v].journal for v, k in releases.LINE_OF.items() if k == key},
            key=len,
        )
        rows.append(
            [
                f"`{key}`",
                " or ".join(drizzle.span(j) for j in journals),
                ", ".join(v for v, k in releases.LINE_OF.items() if k == key),
                ", ".join(f"`{c}`" for c in sorted(r.lacks)) or "none",
                enums,
            ]
        )
    return _table(("era", "recognised by (journal)", "versions", "lacks", "status enums"), rows)


def runtimes() -> str:
    rows = []
    for r in (*releases.RUNTIMES, releases.SLOT_RUNTIME):
        tx = (
            "all"
            if r.transactional == releases.ALL_WRITES
            else (", ".join(sorted(r.transactional or ())) or "none")
        )
        refuses = "everything but `info`" if "*" in r.refuses else ", ".join(sorted(r.refuses))
        rows.append(
            [
                _range(r),
                str(r.spec_version or "per run"),
                tx,
                f"`{r.job_keys}`" if r.job_keys else "—",
                str(r.max_attempts),
                refuses or "—",
                r.checked,
            ]
        )
    head = ("versions", "spec", "entity row and event in one transaction", "flow jobs",
            "max attempts", "refuses", "read from")  # fmt: skip
    return _table(head, rows)


def weights() -> str:
    ranges = [r for r in releases.RUNTIMES if "*" not in r.refuses]
    rows = []
    for code in WEIGHED:
        row = [code]
        for r in ranges:
            rule = r.severities.get(code)
            row.append(f"{rule.severity}: {rule.why}" if rule else "")
        rows.append(row)
    out = _table(("finding", *(_range(r) for r in ranges)), rows)
    unpinned = []
    for key, line in releases.RELEASES.items():
        if not line.worst_case or "*" in line.refuses:
            continue
        cells = []
        for code in WEIGHED:
            rule = line.weight(code, Severity.CRITICAL)
            cells.append(str(rule.severity) if rule else "critical (the check's own)")
        unpinned.append([f"`{key}`", line.package, *cells])
    head = ("era, unpinned", "candidates", *WEIGHED)
    say = "A world whose journal leaves several versions, unpinned, takes the worst case:"
    return f"{out}\n\n{say}\n\n{_table(head, unpinned)}"


def payloads() -> str:
    ranges = [r for r in releases.RUNTIMES if "*" not in r.refuses]
    rows = []
    # The package's writes whose payload some release's replay reads.
    for event in [e for e in releases.WRITES if any(e in r.payload_keys for r in ranges)]:
        row = [f"`{event}`"]
        for r in ranges:
            keys = r.payload_keys.get(event)
            row.append("—" if keys is None else (", ".join(keys) or "no payload"))
        rows.append(row)
    return _table(("event", *(_range(r) for r in ranges)), rows)


def upgrades() -> str:
    rows = []
    for key, line in releases.RELEASES.items():
        up = releases.upgrade(list(line.journal), line)
        if up is None:
            continue
        rows.append(
            [
                f"`{key}`",
                up.to.name,
                ", ".join(t[:4] for t in up.applies) or "nothing",
                ", ".join(t[:4] for t in up.skips) or "nothing",
            ]
        )
    return _table(("from", "to (the next line's migrator)", "applies", "skips"), rows)


TABLES: dict[str, Callable[[], str]] = {
    "versions": versions,
    "migrations": migrations,
    "lines": lines,
    "runtimes": runtimes,
    "weights": weights,
    "payloads": payloads,
    "upgrades": upgrades,
}


def render() -> str:
    text = PROSE.read_text(encoding="utf-8")
    for name, make in TABLES.items():
        text = text.replace("{{" + name + "}}", make())
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when docs/releases.md is stale"
    )
    args = parser.parse_args()
    text = render()
    if args.check:
        stale = OUTPUT.read_text(encoding="utf-8") != text
        print("stale" if stale else "up to date")
        return 1 if stale else 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
