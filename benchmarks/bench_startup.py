"""How fast wfctl starts: `--version`, `--help`, a Tab completion and `doctor` on a small world.

Each command runs as an operator runs it, a new process (`python -m wfctl ...`, interpreter
start included), and is compared with a floor measured in the same run: `python -c "import
typer"` (the interpreter plus the CLI framework, which no typer CLI can avoid). Rounds are
interleaved (floor, then each case, order rotated every round) so a load spike hits every
case alike; the figures are medians over the rounds, printed as ratios to the floor's median.

The small world: a throwaway PostgreSQL (pgserver wheel) holding `benchmarks/gen_world.py`'s
beta.29 world with --runs 1000 --live 20 --faults 1 --no-queue (about 22,000 events).

wfctl is measured as an operator runs it after `pip install`: with its modules byte-compiled,
as pip compiles a wheel's modules at install time and as typer's already are. An editable
install does not compile them, and a machine with PYTHONDONTWRITEBYTECODE set (this one, and CI)
never caches them, so every start would recompile wfctl's ~60 modules on doctor's path (~60 ms
here) while the floor's typer loads from bytecode. The benchmark therefore byte-compiles the
tree first (`compileall`, into the gitignored `__pycache__` folders); `--source` measures the
uncompiled case instead.

Goals: `--version` and `--help` within 2.5x the floor, `doctor` within 4x.

    python benchmarks/bench_startup.py [--rounds 21] [--json FILE] [--source]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import throwaway_server  # noqa: E402

GOALS = {"--version": 2.5, "--help": 2.5, "complete run id": None, "doctor": 4.0}


def _time(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def _small_world(dsn: str) -> None:
    from benchmarks.gen_world import Options, generate

    generate(
        Options(
            dsn=dsn, runs=1000, events_per_run=20, live=20, faults=1, era="beta29",
            queue=False, legacy_fraction=0.5, seed=3,
        )
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument(
        "--source", action="store_true", help="measure wfctl uncompiled (no byte-compiling first)"
    )
    args = p.parse_args(argv)
    if not args.source and not compileall.compile_dir(ROOT / "wfctl", quiet=1):
        raise SystemExit("compileall failed on wfctl/")
    py = sys.executable
    with throwaway_server("wfctl-bench-startup-") as server:
        _small_world(server.dsn)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL")
        }
        env.update(PYTHONPATH=str(ROOT), COLUMNS="100")
        world_env = {**env, "WFCTL_DATABASE_URL": server.dsn}
        complete_env = {
            **world_env,
            "_WFCTL_COMPLETE": "complete_bash",
            "COMP_WORDS": "wfctl runs show wrun_",
            "COMP_CWORD": "3",
        }
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": ([py, "-c", "import typer"], env),
            "--version": ([py, "-m", "wfctl", "--version"], env),
            "--help": ([py, "-m", "wfctl", "--help"], env),
            "complete run id": ([py, "-m", "wfctl"], complete_env),
            "doctor": ([py, "-m", "wfctl", "doctor"], world_env),
        }
        for argv_, env_ in cases.values():  # warm the OS page cache and .pyc files
            _time(argv_, env_)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        load_before = os.getloadavg()
        names = list(cases)
        for r in range(args.rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_time(*cases[name]))
        load_after = os.getloadavg()
    floor = statistics.median(samples["floor"])
    print(f"rounds {args.rounds}; load average before {load_before[0]:.2f}, after"
          f" {load_after[0]:.2f} (1 min); {os.cpu_count()} cores")  # fmt: skip
    print(f"{'case':<16} {'median':>9} {'min':>9} {'ratio':>7}  goal")
    figures = {}
    for name, values in samples.items():
        median = statistics.median(values)
        ratio = median / floor
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"<= {goal}x {'ok' if ratio <= goal else 'MISSED'}"
        print(f"{name:<16} {median * 1000:>7.0f}ms {min(values) * 1000:>7.0f}ms"
              f" {ratio:>6.2f}x  {verdict}")  # fmt: skip
        figures[name] = {"median_s": median, "min_s": min(values), "ratio": ratio}
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "load": [load_before, load_after]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
