"""Types end to end: what a team checks in CI. mypy --strict (and pyright, where installed)
accept the correct calls of tests/runtime/typing_cases/wrong_calls.py.txt (a .txt: pytest's
mypy and ruff plugins must not check the deliberate errors) and report every line
marked `# error` (a wrong argument to a step, to `enqueue`, to `start`/`start_child`, a
misuse of a result), and pass on docs/examples/orders."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).parent / "typing_cases" / "wrong_calls.py.txt"


def marked_lines() -> set[int]:
    lines = CASES.read_text().splitlines()
    return {n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# error")}


def error_lines(output: str, pattern: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern, output)}


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def copy_cases(tmp_path: Path) -> Path:
    """The cases outside the tree (inside it the module would be `tests.…`, a name an
    installed package may own, whose errors mypy silences); checked from the repo root."""
    target = tmp_path / "wrong_calls.py"
    shutil.copy(CASES, target)
    return target


def test_mypy_reports_every_wrong_call_and_nothing_else(tmp_path: Path) -> None:
    cases = copy_cases(tmp_path)
    proc = run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(cases)])
    found = error_lines(proc.stdout, r"wrong_calls\.py:(\d+): error")
    assert found == marked_lines(), proc.stdout


def test_mypy_strict_passes_on_the_orders_example() -> None:
    proc = run([sys.executable, "-m", "mypy", "--strict", "docs/examples/orders"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _pyright() -> list[str]:
    if importlib.util.find_spec("pyright") is None or shutil.which("node") is None:
        pytest.skip("pyright (the dev extra) or node is not installed")
    return [sys.executable, "-m", "pyright", "--pythonpath", sys.executable]


def test_pyright_reports_every_wrong_call_and_nothing_else(tmp_path: Path) -> None:
    proc = run([*_pyright(), str(copy_cases(tmp_path))])
    found = error_lines(proc.stdout, r"wrong_calls\.py:(\d+):\d+ - error")
    assert found == marked_lines(), proc.stdout


def test_pyright_passes_on_the_orders_example() -> None:
    proc = run([*_pyright(), "docs/examples/orders"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
