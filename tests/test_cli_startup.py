"""Start-up: what each path imports (never a timing), and the command registry's honesty.

`wfctl --version`, `--help` and Tab completion must not load the database driver, alembic,
SQLAlchemy or a command's implementation; `wfctl doctor` must not load alembic/SQLAlchemy
(only `bootstrap` and a repair's first apply use them). benchmarks/bench_startup.py measures
the time; these tests pin the cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wfctl.cli import registry, shared

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("alembic", "sqlalchemy", "psycopg", "psycopg_pool", "cbor2", "tabulate", "pydantic")

_PROBE = """
import json, sys
from wfctl.cli.main import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules(*args: str, env: dict[str, str] | None = None) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100", **(env or {})},
        timeout=120,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("args", [("--version",), ("--help",)])
def test_version_and_help_import_no_driver_and_no_implementation(args: tuple[str, ...]) -> None:
    loaded = _modules(*args)
    assert not _tops(loaded) & set(HEAVY), sorted(_tops(loaded) & set(HEAVY))
    implementations = {
        m for m in loaded if m.startswith(("wfctl.doctor", "wfctl.repair", "wfctl.world"))
    }
    assert not implementations, sorted(implementations)
    if args == ("--version",):
        assert "rich" not in _tops(loaded)
        assert not {m for m in loaded if m.startswith("wfctl.cli.commands")}


def test_root_completion_imports_no_command() -> None:
    env = {"_WFCTL_COMPLETE": "complete_bash", "COMP_WORDS": "wfctl ", "COMP_CWORD": "1"}
    loaded = _modules(env=env)
    assert not {m for m in loaded if m.startswith("wfctl.cli.commands")}
    assert not _tops(loaded) & set(HEAVY)
    assert "rich" not in _tops(loaded)  # a Tab press prints no help (no args is not --help)


def test_doctor_imports_neither_alembic_nor_pydantic() -> None:
    # a DSN nobody listens on: the command fails to connect, after importing what it needs
    loaded = _modules("--dsn", "postgresql://nobody@127.0.0.1:9/none", "doctor")
    assert "wfctl.cli.commands.doctor" in loaded
    assert not _tops(loaded) & {"alembic", "sqlalchemy", "pydantic", "tabulate", "rich"}
    others = {m for m in loaded if m.startswith("wfctl.cli.commands.")}
    assert others == {"wfctl.cli.commands.doctor"}


def test_registry_lists_exactly_the_registered_commands_with_their_summaries() -> None:
    root = shared.build(load_all=True)
    assert set(root.commands) == set(registry.COMMANDS)
    for name, command in root.commands.items():
        first = (command.help or "").split("\n\n")[0].strip()
        assert registry.COMMANDS[name].summary == " ".join(first.split()), name


def test_root_help_lists_every_command(run_cli) -> None:
    status, out, _ = run_cli("--help")
    assert status == 0
    for name in registry.COMMANDS:
        assert f" {name} " in out


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The wfctl modules `path` imports anywhere in its code (functions included)."""
    import ast

    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found |= {full} if full in modules else ({base} & modules)
    return found


def test_no_two_cli_modules_import_each_other() -> None:
    """The app, the command table and the shared options (and the commands) form no circle,
    not even through an import inside a function."""
    import wfctl

    tree = Path(wfctl.__file__).resolve().parent  # the wfctl imported (PYTHONPATH may choose)
    paths = {
        ".".join(p.relative_to(tree.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in tree.rglob("*.py")
    }
    cli = {name: path for name, path in paths.items() if name.startswith("wfctl.cli")}
    edges = {name: _imports(path, name, set(paths)) for name, path in cli.items()}
    pairs = {tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, set())}
    assert not pairs, sorted(pairs)


def test_runs_show_imports_neither_opentelemetry_nor_alembic() -> None:
    """`runs show` (its timeline included) reads and draws: no tracing API (imported by the
    runtime at its first span question), no migrations, no pydantic."""
    loaded = _modules("--dsn", "postgresql://nobody@127.0.0.1:9/none", "runs", "show", "wrun_x")
    assert "wfctl.cli.timeline" in loaded
    assert not _tops(loaded) & {"opentelemetry", "alembic", "sqlalchemy", "pydantic"}
