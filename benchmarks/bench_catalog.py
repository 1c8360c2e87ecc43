"""Benchmark the catalog comparison (WF151, bootstrap adoption) by meaning, per PostgreSQL major.

On a world as built, the live catalog prints exactly as the kept one and no predicate is
planned; on a restored world the entity-creation index predicate prints differently and is
compared by planning both forms (two EXPLAINs in a savepoint). This prints, per major: the
median time of `catalog.compare` on a built and on a restored world, and how many
differences a text comparison would have reported there.

    python benchmarks/bench_catalog.py --repeat 50

Worlds: `wfctl bootstrap` (beta.29), moved with pg_dump | psql on the same major. Servers:
every major tests/pgmajors.py can start.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import pgmajors  # noqa: E402
from wfctl.world import catalog  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402


def median_ms(dsn: str, repeat: int) -> tuple[float, int, int]:
    """(median ms of compare, differences by text, differences by meaning)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        text = len(catalog.diff(catalog.expected("beta29"), catalog.describe(conn)))
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            meaning = len(catalog.compare(conn, "beta29"))
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), text, meaning


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print("| major | built: compare ms | restored: compare ms | restored: text diffs | meaning |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for major in pgmajors.installs():
        with pgmajors.cluster(major) as server:
            server.execute("CREATE DATABASE built")
            server.execute("CREATE DATABASE restored")
            with psycopg.connect(server.dsn("built"), autocommit=True) as conn:
                bootstrap(conn, "beta29")
            pgmajors.dump_restore(server.dsn("built"), server.dsn("restored"))
            built, _, _ = median_ms(server.dsn("built"), args.repeat)
            restored, text, meaning = median_ms(server.dsn("restored"), args.repeat)
            print(f"| {major} | {built:.1f} | {restored:.1f} | {text} | {meaning} |")


if __name__ == "__main__":
    main()
