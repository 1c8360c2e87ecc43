"""The docs stand alone and can be followed: no link leaves the repository, no internal issue
numbers, every CLI option is in docs/cli.md, runtime.md's first example and the README's
quick tour run as written (the tour on a fresh embedded server, as on a new machine)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wfctl.cli import main as _main  # noqa: F401
from wfctl.cli import shared
from wfctl.errors import ExitStatus

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# `issue 5`, `issues 6, 7`, a bare `#3656`: references a reader of the repository cannot open.
# An upstream issue is cited as plain text naming its project: `vercel/workflow#3656`.
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+|(?<![\w/.-])#\d+\b")


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_links_outside_the_repository(doc: Path) -> None:
    text = doc.read_text()
    assert "../shared" not in text and "/work/" not in text
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT), f"{doc.name} links outside the repository: {target}"
        assert path.exists(), f"{doc.name} links to a missing file: {target}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_cites_internal_issue_numbers(doc: Path) -> None:
    found = [m.group(0) for m in ISSUE.finditer(doc.read_text())]
    assert not found, f"{doc.name} cites {found}: say what was checked, or name the upstream"


def test_the_issue_pattern_tells_internal_from_upstream() -> None:
    assert ISSUE.search("the runtime (issue 6)") and ISSUE.search("Issues 6, 7")
    assert ISSUE.search("non-transactional (#2781)")
    assert not ISSUE.search("(upstream vercel/workflow#2781)")
    assert not ISSUE.search("see [cli.md](cli.md#global-options)")


def test_every_option_of_every_command_is_in_cli_md() -> None:
    cli_md = (ROOT / "docs" / "cli.md").read_text()
    missing: list[str] = []

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            for opt in getattr(param, "opts", ()):
                named = re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", cli_md)
                if opt.startswith("--") and not named:
                    missing.append(f"{path} {opt}")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(shared.build(load_all=True), "wfctl")
    assert not missing, f"docs/cli.md does not mention: {missing}"


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    first = _blocks(readme, "sh")[0].strip().splitlines()
    # compat: an editable install type checkers can see (docs/api.md, "Types")
    install = "pip install -e '.[dev]' --config-settings editable_mode=compat"
    assert first == [install, "pytest"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in ci and any(line.startswith("pytest") for line in ci)
    assert "Python >= 3.11" in readme and "virtualenv" in readme and "2.6 GB" in readme


def test_runtime_md_first_example_runs_as_pasted(run_cli, wfctl_world, monkeypatch, tmp_path):
    """The python block, saved as the file its `sh` block names, driven by those commands."""
    runtime_md = (ROOT / "docs" / "runtime.md").read_text()
    code, commands = _blocks(runtime_md, "python")[0], _blocks(runtime_md, "sh")[0]
    run_line = commands.splitlines()[0].split("#")[0]
    resume_line = commands.splitlines()[1].split("#")[0]
    argv = shlex.split(run_line)[1:]
    target = argv[1]
    module_file = tmp_path / target.split(":")[0]
    module_file.write_text(code)
    argv[1] = f"{module_file}:{target.split(':')[1]}"
    monkeypatch.setenv("WORKFLOW_POSTGRES_URL", wfctl_world.dsn)
    # it blocks on the hook: bounded here, the run stays durable
    status, out, err = run_cli(*argv, "--timeout", "3s")
    assert status == ExitStatus.WARNING, err
    run_id = out.splitlines()[0]
    assert "waits for hook token 'approve-order-1'" in err
    status, _, err = run_cli(*shlex.split(resume_line)[1:])
    assert status == 0, err
    status, out, err = run_cli("run", argv[1], "--id", run_id, "--wait", "-o", "json")
    assert status == 0, err
    done = json.loads(out)
    assert done["status"] == "completed"
    assert done["output"] == {
        "charge": "ch_order-1_42",
        "sent": ["sent by email", "sent by sms"],
        "decision": {"approved": True},
    }


def test_readme_quick_tour_runs_on_a_fresh_machine(tmp_path: Path) -> None:
    """No DSN anywhere and an empty home: the tour's commands as written, in order, on an
    embedded server wfctl starts itself; first, the read commands agree it holds no world and
    do not create one; last, `wfctl embedded stop` stops the server."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PG")
        and k
        not in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL", "WFCTL_EMBEDDED_DIR")
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        NO_COLOR="1",
        COLUMNS="80",
    )

    def wfctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wfctl", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    try:
        fresh = [wfctl("runs", "list"), wfctl("info"), wfctl("doctor")]
        for done in fresh:
            assert done.returncode == ExitStatus.UNKNOWN, done.stderr
            assert "holds no world" in done.stderr or "no world" in done.stdout
            assert done.stderr.count("using the embedded PostgreSQL") == 1
        readme = (ROOT / "README.md").read_text()
        tour = readme.split("## Try it with no configuration", 1)[1]
        for line in _blocks(tour, "sh")[0].strip().splitlines():
            argv = shlex.split(line.split("#")[0])
            assert argv[0] == "wfctl"
            done = wfctl(*argv[1:])
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            assert done.stderr.count("using the embedded PostgreSQL") == 1
        # a machine format never answers from the embedded server implicitly (cron that lost
        # its environment); `embedded status` reads its pid file and gives the DSN to pass
        refused = wfctl("info", "-o", "json")
        assert refused.returncode == 3 and "no database configured" in refused.stderr
        embedded = json.loads(wfctl("embedded", "status", "-o", "json").stdout)
        assert embedded["running"] and embedded["dsn"].startswith("postgresql://")
        info = json.loads(wfctl("--dsn", embedded["dsn"], "info", "-o", "json").stdout)
        assert info["world"] is True
        # a worker connects many times: the banner still prints once per process
        many = subprocess.run(
            [sys.executable, "-c", "from wfctl.connection.db import Target, connect\n"
             "from wfctl.connection.dsn import resolve_dsn\n"
             "t = Target(resolve_dsn(None))\n"
             "for _ in range(5):\n"
             "    with connect(t) as c: c.execute('SELECT 1')\n"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert many.returncode == 0 and many.stderr.count("embedded PostgreSQL") == 1
    finally:
        stopped = wfctl("embedded", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    status = wfctl("embedded", "status")
    assert status.returncode == 1 and "not running" in status.stdout
