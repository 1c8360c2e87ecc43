"""Generate docs/checks.md from the check registry and the plans on a large world.

The prose comes from one source, each check's `explanation` in `wfctl/doctor/wf*.py`; the
plans come from the generated worlds (benchmarks/gen_world.py), taken exactly as the doctor
runs each query: a plain `EXPLAIN <the check's SQL>` (the doctor streams plain queries, so
the server may plan them in parallel) with the parameters and the transaction-local
`work_mem` of `DoctorOptions`.

Default-mode plans are `EXPLAIN (ANALYZE, BUFFERS)`: they take milliseconds. `--all`
plans are plain `EXPLAIN` (estimates only) for the checks that read history.

    python benchmarks/explain_checks.py --db world_1000000 --slot-db world_slot_1000000

`--reuse-plans` re-renders the prose (explanations, upstream rule names, the coverage of
upstream's rules) without a database, keeping every plan already in the output file; a check
that has none yet says so until the next full run:

    python benchmarks/explain_checks.py --reuse-plans
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_world  # noqa: E402

from wfctl import sql  # noqa: E402
from wfctl.doctor import registry  # noqa: E402
from wfctl.doctor.base import UPSTREAM_GAPS, UPSTREAM_RULES, Check, Needs  # noqa: E402
from wfctl.doctor.runner import DoctorOptions  # noqa: E402
from wfctl.doctor.support import check_support  # noqa: E402
from wfctl.world import releases  # noqa: E402

# Checks whose --all scope reads the history (events/steps/runs); the others read the
# live-only tables (waits, hooks), the queue or the catalog and plan the same either way.
HISTORY_CHECKS = {
    "WF101", "WF111", "WF113", "WF121", "WF122", "WF123", "WF141",
    "WF142", "WF143", "WF145", "WF146", "WF147", "WF148", "WF149", "WF152", "WF154",
}  # fmt: skip
NO_PLAN = "(no plan yet: added after the last full run of this script)"
OUTPUT = ROOT / "docs" / "checks.md"
# Prose that belongs to no single check (slot-log rewrites, spec versions), appended verbatim.
APPENDIX = Path(__file__).resolve().parent / "checks_appendix.md"


def explain(
    conn: psycopg.Connection[Any], query: str, params: dict[str, Any], analyze: bool
) -> str:
    """The plan of `query` as the doctor runs it: a plain query, the doctor's work_mem."""
    options = "(ANALYZE, BUFFERS)" if analyze else ""
    work_mem = DoctorOptions().work_mem
    with conn.transaction():
        conn.execute("SET TRANSACTION READ ONLY")
        if work_mem:
            conn.execute("SELECT set_config('work_mem', %s, true)", (work_mem,))
        rows = conn.execute(f"EXPLAIN {options} {query}", params)
        return "\n".join(str(r[0]) for r in rows.fetchall())


def gen_command(manifest: dict[str, Any], dbname: str) -> str:
    """The gen_world.py command line that rebuilds a world from its manifest."""
    parts = ["python benchmarks/gen_world.py"]
    parts.append(f"--runs {manifest.get('runs')} --events-per-run {manifest.get('events_per_run')}")
    parts.append(f"--live {manifest.get('live')}")
    if manifest.get("era") == "slot":
        parts.append("--era slot")
    if not manifest.get("queue", True):
        parts.append("--no-queue")
    parts.append(f"--dbname {dbname}")
    return " ".join(parts)


def manifest_of(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    row = conn.execute(
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database"
        " WHERE datname = current_database()"
    ).fetchone()
    return json.loads(row[0]) if row and row[0] else {}


def world_label(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute(
        "SELECT current_database(), shobj_description(oid, 'pg_database'),"
        " (SELECT reltuples::bigint FROM pg_class WHERE oid = 'workflow.workflow_events'::regclass)"
        " FROM pg_database WHERE datname = current_database()"
    ).fetchone()
    assert row is not None
    manifest = json.loads(row[1]) if row[1] else {}
    return (
        f"`{row[0]}`: {manifest.get('era', '?')} era, {manifest.get('runs', 0):,} runs, "
        f"~{int(row[2]):,} events, {manifest.get('live', 0):,} live runs"
        + (", graphile_worker installed" if manifest.get("queue") else "")
    )


def sql_files(check: Check) -> list[str]:
    names = [f"sql/checks/{check.code}.sql"]
    names += [f"sql/{name}.sql" for name in check.sql_by_era.values()]
    return names


def section(check: Check, plans: list[tuple[str, str]]) -> list[str]:
    e = check.explanation
    needs = ", ".join(
        {
            "slots": "a slot-era world",
            "queue": "graphile_worker",
            "run_queue": "wfctl's worker queue",
        }[n.value]
        for n in sorted(check.needs)
    )
    lines = [
        f"## {check.code} — {check.title}",
        "",
        f"- **Severity:** {check.severity.value}",
    ]
    if needs:
        lines.append(f"- **Needs:** {needs} (otherwise: not applicable)")
    lines.append(f"- **Releases:** {releases_text(check)}")
    lines += [
        f"- **SQL:** {', '.join(f'`{n}`' for n in sql_files(check))}",
        f"- **Upstream rules:** {rules_text(check)}",
        f"- **Remedy:** {check.remedy}",
        "",
        f"**What it means.** {e.meaning}",
        "",
        f"**Why the run is stuck.** {e.why_stuck}",
        "",
        f"**How it happened.** {e.cause}",
        "",
        f"**What `wfctl repair` does.** {e.repair}",
        "",
    ]
    for caption, plan in plans:
        lines += [f"{caption}:", "", "```", plan, "```", ""] if plan else [caption, ""]
    return lines


def releases_text(check: Check) -> str:
    """Per release line (wfctl.world.releases): applies with which severity, or why not."""
    parts = []
    for release in releases.RELEASES.values():
        if "*" in release.refuses:  # the pg-boss betas: named by info, acted on by nothing
            continue
        _, how = check_support(check, release)
        parts.append(f"{release.package}: {how}")
    return "; ".join(parts)


def releases_column(check: Check) -> str:
    """The table's short form: the release lines the check applies on."""
    acted_on = [r for r in releases.RELEASES.values() if "*" not in r.refuses]
    keys = [r.key for r in acted_on if check_support(check, r)[0]]
    return ", ".join(keys) if len(keys) < len(acted_on) else "all"


def rules_text(check: Check) -> str:
    """The check's upstream consistency-checker rule names, or why it has none."""
    if check.upstream_rules:
        return ", ".join(f"`{r}`" for r in check.upstream_rules)
    return "none (upstream's checker has no rule for this: queue, catalog or row-only state)"


def table(checks: tuple[Check, ...]) -> list[str]:
    rows = [
        "| code | severity | title | releases | upstream rules |",
        "| --- | --- | --- | --- | --- |",
    ]
    rows += [
        f"| [{c.code}](#{anchor(c)}) | {c.severity.value} | {c.title} | {releases_column(c)} | "
        f"{', '.join(f'`{r}`' for r in c.upstream_rules) or '—'} |"
        for c in checks
    ]
    return rows


def coverage(checks: tuple[Check, ...]) -> list[str]:
    """Upstream's 25 rule names: the codes covering each, and the gaps with their reason."""
    lines = [
        "## Upstream's consistency rules",
        "",
        "Upstream's own consistency checker (`vercel/workflow`, `workbench/sim-world`) names 25",
        "rules; each check above lists the ones it covers (also in `doctor --explain` and in",
        "the JSON report's `upstream_rules`). Replay rules (`replay.*`) need the workflow code",
        "and are out of a database tool's reach.",
        "",
        "| rule | covered by |",
        "| --- | --- |",
    ]
    for rule in UPSTREAM_RULES:
        codes = [f"[{c.code}](#{anchor(c)})" for c in checks if rule in c.upstream_rules]
        lines.append(f"| `{rule}` | {', '.join(codes) or 'not covered (below)'} |")
    lines += ["", "Not covered, and why:", ""]
    lines += [f"- `{rule}`: {why}." for rule, why in UPSTREAM_GAPS.items()]
    return [*lines, ""]


def reused_plans(path: Path) -> tuple[list[str], dict[str, list[tuple[str, str]]]]:
    """From an earlier output: its preamble (up to the table) and each code's plans."""
    text = path.read_text(encoding="utf-8").splitlines()
    preamble: list[str] = []
    plans: dict[str, list[tuple[str, str]]] = {}
    code: str | None = None
    i = 0
    while i < len(text):
        line = text[i]
        if code is None and not line.startswith("## ") and not line.startswith("| "):
            preamble.append(line)
        if line.startswith("## WF"):
            code = line.split()[1]
            plans[code] = []
        elif line.startswith("## "):
            code = ""
        elif code and line.endswith(":") and text[i + 2 : i + 3] == ["```"]:
            end = text.index("```", i + 3)
            plans[code].append((line[:-1], "\n".join(text[i + 3 : end])))
            i = end
        i += 1
    while preamble and not preamble[-1].strip():
        preamble.pop()
    return preamble, plans


def rerender(output: Path) -> int:
    """Re-render the prose, keeping the plans of the existing file."""
    preamble, plans = reused_plans(output)
    out = [*preamble, "", *table(registry.CHECKS), ""]
    for check in registry.CHECKS:
        out += section(check, plans.get(check.code) or [(NO_PLAN, "")])
    out += APPENDIX.read_text(encoding="utf-8").splitlines()  # as the full run lays it out
    out += coverage(registry.CHECKS)
    output.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {output} (plans reused)")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", help="the large beta.29 world (required unless --reuse-plans)")
    p.add_argument("--slot-db", help="a large slot-era world, for the slot-only checks")
    p.add_argument("--pgdata", type=Path, default=gen_world.DEFAULT_PGDATA)
    p.add_argument("--dsn", help="admin DSN of an existing server instead of --pgdata")
    p.add_argument("--output", type=Path, default=OUTPUT)
    p.add_argument(
        "--reuse-plans", action="store_true", help="re-render prose only, keep the file's plans"
    )
    args = p.parse_args(argv)
    if args.reuse_plans:
        return rerender(args.output)
    if not args.db:
        p.error("--db is required (or --reuse-plans)")
    admin = args.dsn or gen_world.start_server(args.pgdata)
    conns = {"beta29": psycopg.connect(gen_world.db_dsn(admin, args.db), autocommit=True)}
    if args.slot_db:
        conns["slot"] = psycopg.connect(gen_world.db_dsn(admin, args.slot_db), autocommit=True)
    default, everything = DoctorOptions().params(), DoctorOptions(all_runs=True).params()
    version = conns["beta29"].execute("SHOW server_version").fetchone()
    cmd = "python benchmarks/explain_checks.py --db " + args.db
    if args.slot_db:
        cmd += f" --slot-db {args.slot_db}"
    out = [
        "# Doctor checks",
        "",
        "<!-- Generated by benchmarks/explain_checks.py: edit the check's `explanation` in",
        "     wfctl/doctor/wf*.py or its SQL in sql/checks/, then regenerate. -->",
        "",
        "One section per finding code: what it means, why the run is stuck, how it happened,",
        "what `wfctl repair` does (the same text as `wfctl doctor --explain CODE`), the SQL",
        "file, and the plan PostgreSQL chooses for it on a large generated world.",
        "",
        f"Regenerated on {datetime.now(UTC):%Y-%m-%d} with `{cmd}`",
        "on worlds built by `benchmarks/gen_world.py` (figures and machine in",
        "[benchmarks.md](benchmarks.md#wfctl-doctor-issue-3)). PostgreSQL "
        f"{version[0] if version else '?'}, stock planner settings (random_page_cost 4,",
        "max_parallel_workers_per_gather 2) but for the doctor's own transaction-local",
        f"work_mem ({DoctorOptions().work_mem}, `--work-mem`). Worlds:",
        "",
    ]
    for era, conn in conns.items():
        out.append(f"- {era}: {world_label(conn)}; built with")
        out.append(f"  `{gen_command(manifest_of(conn), str(conn.info.dbname))}`")
    out += [
        "",
        "Plans are taken as the doctor runs each query: a plain query whose rows are streamed",
        "(`cursor.stream()`), which PostgreSQL may plan in parallel. *Default* is the cron scope",
        "(pending/running runs and the queue), with `EXPLAIN (ANALYZE, BUFFERS)`; *--all* is",
        "the history scan, `EXPLAIN` only (estimates), for the checks that read history.",
        "",
        *table(registry.CHECKS),
        "",
    ]
    for check in registry.CHECKS:
        era = "slot" if Needs.SLOTS in check.needs else "beta29"
        plans: list[tuple[str, str]] = []
        eras = [era] if era == "slot" or not check.sql_by_era else ["beta29", "slot"]
        for e in eras:
            conn = conns.get(e)
            if conn is None:
                continue
            name = check.sql_name(e)
            query = sql.load(name)
            where = f"`{name}.sql` on the {e} world" if len(eras) > 1 else f"the {e} world"
            plans.append((f"Default scope, {where}", explain(conn, query, default, True)))
            if check.code in HISTORY_CHECKS:
                plans.append((f"`--all`, {where}", explain(conn, query, everything, False)))
            print(f"{check.code} ({e}): planned", flush=True)
        if not plans:
            plans.append(("(no slot-era world given: no plan)", ""))
        out += section(check, plans)
    out += APPENDIX.read_text(encoding="utf-8").splitlines()
    out += coverage(registry.CHECKS)
    args.output.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    for conn in conns.values():
        conn.close()
    return 0


def anchor(check: Check) -> str:
    """GitHub's anchor for `## WF101 — title`: lower case, spaces to dashes, punctuation out."""
    text = f"{check.code} — {check.title}".lower()
    kept = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


if __name__ == "__main__":
    raise SystemExit(main())
