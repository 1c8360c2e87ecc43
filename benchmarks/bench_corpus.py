"""Benchmark `wfctl doctor` and `wfctl repair --apply` on the corpus worlds.

The corpus (tests/corpus/) is small: worlds of 8 and 18 runs made by the real Node runtime
(beta.39 on world-postgres beta.29), torn by fault injection and moved through
pg_dump/psql. What an operator waits for there is the command, so this times the command
line (`python -m wfctl ...`, interpreter start included) and reports the scan's own time
from the doctor's JSON (`duration_seconds`) beside it.

    python benchmarks/bench_corpus.py --reps 5

Each repetition runs on a fresh copy (CREATE DATABASE ... TEMPLATE) of the restored world:
`doctor --all --min-age 0s`, then `repair --all --apply` (with `--unlock-dead-worker` for
the workers the crash killed). A repair that refuses the restored world for want of its
audit schema is timed on the world as the runtime left it (before the dump), adopted by
`wfctl bootstrap` first, and the output says so ("adopted").
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import judge  # noqa: E402
from tests.conftest import Server, _create_db, real_bootstrap  # noqa: E402
from tests.corpus.conftest import Cli, wfctl  # noqa: E402
from tests.corpus.worlds import World, build_corpus, wait_idle  # noqa: E402

FORCE = ("--min-age", "0s", "--force-min-age")


def timed(dsn: str, *args: str) -> tuple[float, Cli]:
    t0 = time.monotonic()
    result = wfctl(dsn, *args)
    return time.monotonic() - t0, result


def bench_world(server: Server, world: World, reps: int) -> tuple[dict[str, list[float]], bool]:
    """{stage: seconds per repetition}, and whether the repair ran on the adopted copy."""
    out: dict[str, list[float]] = {"doctor": [], "doctor_scan": [], "repair": []}
    unlock = [a for w in world.dead_workers for a in ("--unlock-dead-worker", w)]
    adopted = False
    for _ in range(reps):
        wait_idle(server, world.template)
        db = _create_db(server, world.template, prefix=f"bench_{world.name}")
        seconds, doctor = timed(db.dsn, "doctor", "--all", "--min-age", "0s", "--limit", "1000")
        out["doctor"].append(seconds)
        out["doctor_scan"].append(float(doctor.report["duration_seconds"]))
        apply = ("repair", "--all", *FORCE, *unlock, "--apply", "--yes", "--reason", "bench")
        seconds, repair = timed(db.dsn, *apply)
        if repair.report is None:
            wait_idle(server, world.source)
            db = _create_db(server, world.source, prefix=f"bench_{world.name}_adopted")
            subprocess.run(
                [sys.executable, "-m", "wfctl", "--dsn", db.dsn, "bootstrap"],
                check=True,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            seconds, repair = timed(db.dsn, *apply)
            assert repair.report is not None, repair.stderr
            adopted = True
        out["repair"].append(seconds)
    return out, adopted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions per world")
    parser.add_argument("--dsn", help="admin DSN of a server (default: a throwaway pgserver)")
    args = parser.parse_args()
    if not judge.available():
        print("node/npm not found: the corpus needs the real runtime", file=sys.stderr)
        return 2
    data_dir = None
    if args.dsn:
        server = Server(args.dsn)
    else:
        import pgserver

        data_dir = Path(tempfile.mkdtemp(prefix="bench-corpus-pg-"))
        pg = pgserver.get_server(str(data_dir), cleanup_mode="stop")
        server = Server(str(pg.get_uri()), data_dir)
    try:
        load = os.getloadavg()
        print(f"# {platform.node()} {os.cpu_count()} cpus, load {load[0]:.1f} {load[1]:.1f}")
        template = _create_db(server, prefix="bench_real")
        real_bootstrap(template.dsn)
        folder, _ = judge.build_runtime()
        t0 = time.monotonic()
        worlds = build_corpus(server, template.name, folder, Path(tempfile.mkdtemp()))
        print(f"# corpus built (and dumped/restored) in {time.monotonic() - t0:.1f}s")
        print("| world | runs | doctor --all (CLI) | doctor scan | repair --apply (CLI) | note |")
        print("| --- | ---: | --- | --- | --- | --- |")
        for world in worlds.values():
            got, adopted = bench_world(server, world, args.reps)
            cells = [
                f"{min(got[k]):.2f} / {statistics.median(got[k]):.2f} / {max(got[k]):.2f} s"
                for k in ("doctor", "doctor_scan", "repair")
            ]
            note = "repair on the adopted pre-restore copy" if adopted else ""
            print(f"| {world.name} | {len(world.runs)} | {' | '.join(cells)} | {note} |")
        load = os.getloadavg()
        print(f"# min / median / max of {args.reps}; load after {load[0]:.1f} {load[1]:.1f}")
    finally:
        if data_dir is not None:
            pg.cleanup()
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
