"""What a new operator meets first: options after the command, help, errors, tables at 80
columns, one timestamp form, `run --wait` telling what it waits on, read commands that
never write. Commands are found by walking the registered tree, so new ones are covered."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wfctl.cli import main as _main  # noqa: F401
from wfctl.cli import shared
from wfctl.doctor import registry
from wfctl.errors import ExitStatus
from wfctl.runtime.engine import StepFailedError, short_name
from wfctl.world import ids

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT = "docs/examples/checkout.py:checkout"
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
UNREACHABLE = "postgresql://wfctl@127.0.0.1:1/nowhere"


def _tree() -> list[tuple[tuple[str, ...], Any]]:
    """Every registered command and group below the root, with its path."""
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            found.append(((*path, name), sub))
            walk(sub, (*path, name))

    walk(shared.build(load_all=True), ())
    return found


def _with_shared(path: tuple[str, ...]) -> bool:
    return " ".join(("wfctl", *path)) not in shared.NO_SHARED_OPTIONS


COMMANDS = [path for path, _ in _tree()]
# groups that only dispatch (`wfctl repair` alone is a dry run: it acts without a subcommand)
GROUPS = [
    path
    for path, cmd in _tree()
    if getattr(cmd, "commands", None) and not getattr(cmd, "invoke_without_command", False)
]
LEAVES = [path for path, cmd in _tree() if not getattr(cmd, "commands", None)]


@pytest.fixture
def columns_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture
def world_env(monkeypatch: pytest.MonkeyPatch, wfctl_world: Any, run_cli: Any) -> Any:
    """run_cli against a fresh wfctl world (the env var is set after run_cli cleared it)."""
    monkeypatch.setenv("WORKFLOW_POSTGRES_URL", wfctl_world.dsn)
    return wfctl_world


# -- 1: --format/-f/-o and --dsn after the command -----------------------------------------


@pytest.mark.parametrize("path", [p for p in COMMANDS if _with_shared(p)], ids=" ".join)
def test_every_command_takes_format_and_dsn_after_its_name(path: tuple[str, ...]) -> None:
    command = dict(_tree())[path]
    by_name = {p.name: p for p in command.params}
    fmt, dsn = by_name["output_format"], by_name["dsn"]
    assert fmt.rich_help_panel == dsn.rich_help_panel == shared.PANEL
    assert "--format" in fmt.opts and dsn.opts == ["--dsn"]


@pytest.mark.parametrize("path", [p for p in LEAVES if _with_shared(p)], ids=" ".join)
def test_format_after_the_command_is_parsed_there(run_cli, path: tuple[str, ...]) -> None:
    """A bad --format after any command is refused by that command's parser, in plain words
    (not "No such option"), with that command's help in the hint."""
    status, out, err = run_cli(*path, "--format", "xml")
    assert status == ExitStatus.USAGE and out == ""
    assert "No such option" not in err
    if "Missing argument" not in err:
        assert err.startswith("wfctl: error: --format: 'xml' is not one of")
        assert f"`wfctl {' '.join(path)} --help`" in err


def test_format_after_the_command_means_the_global_format(run_cli, world_env) -> None:
    status, out, _ = run_cli("info", "-o", "json")
    assert status == 0 and json.loads(out)["era"] == "beta29"
    status, out, _ = run_cli("doctor", "--format", "json")
    assert status == 0 and json.loads(out)["summary"]["status"] == "ok"
    status, out, _ = run_cli("runs", "list", "-f", "json")
    assert status == 0 and json.loads(out) == []
    # the same refusal as the global form, and the later one wins
    status, _, err = run_cli("info", "--format", "prometheus")
    assert status == ExitStatus.USAGE and "--format prometheus is not available" in err
    status, out, _ = run_cli("--format", "prometheus", "info", "--format", "json")
    assert status == 0 and json.loads(out)["era"] == "beta29"


def test_dsn_after_the_command_overrides_the_environment(run_cli, world_env, empty_db) -> None:
    status, out, _ = run_cli("info", "--dsn", empty_db.dsn, "-o", "json")
    assert status == ExitStatus.UNKNOWN and json.loads(out)["database"] == empty_db.name
    status, out, _ = run_cli("--dsn", UNREACHABLE, "info", "--dsn", world_env.dsn, "-o", "json")
    assert status == 0 and json.loads(out)["database"] == world_env.name


# -- 5: help and usage errors --------------------------------------------------------------


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "wfctl")
def test_help_shows_no_value_placeholder_on_flags(run_cli, columns_80, path) -> None:
    status, out, _ = run_cli(*path, "--help")
    assert status == 0
    for placeholder in ("<bool>", "<int>", "<str>", "<list"):
        assert placeholder not in out, f"wfctl {' '.join(path)} --help shows {placeholder}"
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_examples_fit_80_columns(path: tuple[str, ...]) -> None:
    """An example wrapped by the terminal cannot be pasted: each stays within 80 columns
    (rich indents the help by one column and pads one on the right)."""
    examples = [
        line
        for line in (dict(_tree())[path].help or "").splitlines()
        if line.lstrip().startswith(("wfctl ", "psql "))
    ]
    assert all(len(line) <= 78 for line in examples), [e for e in examples if len(e) > 78]


def test_verbose_is_a_counted_flag(run_cli) -> None:
    status, out, _ = run_cli("-vv", "--help")
    assert status == 0 and "repeat it (-vv)" in " ".join(out.split())
    status, _, err = run_cli("--verbose", "1", "info")
    assert status == ExitStatus.USAGE and "-v/--verbose takes no value" in err


def test_help_prose_is_reflowed_and_examples_keep_their_lines() -> None:
    command = dict(_tree())[("doctor",)]
    paragraphs = [p.strip() for p in command.help.split("\n\n") if p.strip()]
    prose = [p for p in paragraphs if not p.startswith("[bold]")]
    assert prose and all("\n" not in p for p in prose)
    examples = next(p for p in paragraphs if p.startswith("[bold]Examples"))
    assert examples.count("\n  wfctl doctor") >= 2


@pytest.mark.parametrize("path", GROUPS, ids=" ".join)
def test_a_group_without_its_subcommand_prints_help(run_cli, path) -> None:
    status, out, err = run_cli(*path)
    assert status == 0 and "Usage: wfctl" in out and err == ""


def test_a_missing_argument_names_the_subcommand_help(run_cli) -> None:
    status, _, err = run_cli("runs", "show")
    assert status == ExitStatus.USAGE
    assert "RUN_ID" in err and "(hint: see `wfctl runs show --help`)" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("runs", "list", "--limit", "x"), "--limit: expected a whole number, got 'x'"),
        (("runs", "list", "--limit", "0"), "--limit: must be at least 1, got '0'"),
        (("repair", "--jobs", "99"), "--jobs: must be at most 32, got '99'"),
        (("bootstrap", "--era", "x"), "--era: 'x' is not one of 'beta29', 'slot'"),
        (("--statement-timeout", "soon", "info"), "--statement-timeout: expected a whole"),
    ],
)
def test_validation_errors_speak_plainly(run_cli, args, expected) -> None:
    status, _, err = run_cli(*args)
    assert status == ExitStatus.USAGE and expected in err
    assert "Input should" not in err and "Value error" not in err


def test_explain_honours_the_format(run_cli) -> None:
    status, out, _ = run_cli("--format", "json", "doctor", "--explain", "WF112")
    assert status == 0
    explained = json.loads(out)
    assert explained["code"] == "WF112" and explained["meaning"] and explained["repair"]
    status, out, _ = run_cli("doctor", "--explain", "WF112", "-o", "prometheus")
    assert status == ExitStatus.USAGE


def test_doctor_summary_counts_in_words(run_cli, world_env) -> None:
    status, _, err = run_cli("doctor")
    assert status == 0
    # every registered check ran (the count grows with the registry, so it is not spelled here)
    assert f"OK: {len(registry.select(None))} checks, 0 findings;" in err, err


def test_empty_tables_say_none(run_cli, world_env, columns_80) -> None:
    status, out, _ = run_cli("runs", "list")
    assert status == 0 and out.strip() == "none"
    status, out, _ = run_cli("repair", "log", "-o", "plain")
    assert status == 0 and out.strip() == "none"


def test_a_failed_step_is_named_once_and_short() -> None:
    name = "step//py:shop.flows//charge"
    assert short_name(name) == "shop.flows.charge"
    assert short_name("workflow//py:checkout//checkout") == "checkout.checkout"
    assert short_name("step//./src/flows.ts//charge") == "./src/flows.ts.charge"
    assert short_name("plain") == "plain"
    error = StepFailedError(name, {"name": "ValueError", "message": "card declined"})
    assert str(error) == "step shop.flows.charge failed: ValueError: card declined"


# -- 2: ids never cut at 80 columns, one timestamp form --------------------------------------


def _drive_checkout(run_cli: Any) -> str:
    status, out, err = run_cli("run", CHECKOUT, '["order-1"]', "--wait", "-o", "json")
    assert status == 0, err
    return str(json.loads(out)["run_id"])


def _assert_whole(ids_: set[str], out: str, width: int = 80) -> None:
    assert ids_, "nothing to look for"
    assert "…" not in out
    drawn = [line for line in out.splitlines() if re.search("[│┃━─]", line)]
    assert all(len(line) <= width for line in drawn)  # tables fit; data lines (JSON) may not
    words = set(re.findall(r"[\w:-]+", out))
    missing = {i for i in ids_ if i not in words}
    assert not missing, f"cut or missing ids: {missing}\n{out}"


def test_runs_list_and_show_keep_every_id_whole_at_80_columns(
    run_cli, world_env, columns_80
) -> None:
    run_id = _drive_checkout(run_cli)
    status, out, _ = run_cli("runs", "list")
    assert status == 0
    _assert_whole({run_id}, out)
    status, shown, _ = run_cli("runs", "show", run_id, "-o", "json")
    report = json.loads(shown)
    every = {run_id} | {s["step_id"] for s in report["steps"]} | {e["id"] for e in report["events"]}
    status, out, _ = run_cli("runs", "show", run_id)
    assert status == 0
    _assert_whole(every, out)
    # one timestamp form, text and JSON alike
    stamps = [report["created_at"], report["completed_at"]]
    stamps += [e["created_at"] for e in report["events"]]
    listed = json.loads(run_cli("runs", "list", "-o", "json")[1])[0]
    stamps += [listed["created_at"], listed["completed_at"]]
    assert all(ISO.match(s) for s in stamps), stamps
    assert report["events"][0]["created_at"] in out


def test_repair_log_keeps_ids_whole_at_80_columns(run_cli, world_env, columns_80) -> None:
    run_id, step_id = ids.prefixed("wrun"), ids.prefixed("step")
    events = [ids.legacy_event_id(), ids.legacy_event_id()]
    with world_env.connect() as conn:
        conn.execute(
            "INSERT INTO wfctl.repair_log (db_user, wfctl_version, reason, code, run_id,"
            " entity_id, event_ids, details) VALUES (current_user, 'test', 'INC-42 wedged"
            " checkout runs after the deploy', 'WF111', %s, %s, %s, '{}')",
            (run_id, step_id, events),
        )
    status, out, _ = run_cli("repair", "log")
    assert status == 0
    _assert_whole({run_id, step_id, *events}, out)
    entry = json.loads(run_cli("repair", "log", "-o", "json")[1])[0]
    assert ISO.match(entry["at"])


def test_worker_status_keeps_ids_whole_at_80_columns(run_cli, world_env, columns_80) -> None:
    from wfctl.cli.commands.run import load_registry
    from wfctl.worker import queue as q
    from wfctl.world.bootstrap import ensure_worker_schema

    worker = f"build-host-{os.getpid()}:{os.getpid()}:{ids.new_ulid()}"
    served = load_registry(CHECKOUT).served_names()  # what a worker of CHECKOUT records
    with world_env.connect() as conn:
        ensure_worker_schema(conn)
        q.register(
            conn, worker=worker, host="build-host", pid=os.getpid(), queue="default",
            concurrency=4, lease=15.0, workflows=served,
        )  # fmt: skip
    status, out, err = run_cli("run", CHECKOUT, '["o-2"]', "--detach", "-o", "json")
    assert status == 0, err
    run_id = json.loads(out)["run_id"]
    status, out, _ = run_cli("worker", "status")
    assert status == 0
    _assert_whole({worker, run_id}, out)


# -- 3: run --wait says what it waits on; Ctrl-C, SIGTERM and --timeout say how to go on ---


HOOK_FLOW = """
from wfctl.runtime import Workflows, create_hook

wf = Workflows()


@wf.workflow
async def approve(order_id: str) -> object:
    return await create_hook(token=f"approve-{order_id}")
"""


def test_run_wait_reports_the_hook_and_the_timeout_hint(run_cli, world_env, tmp_path) -> None:
    flow = tmp_path / "hook_flow_timeout.py"
    flow.write_text(HOOK_FLOW)
    status, out, err = run_cli("run", f"{flow}:approve", '["o-9"]', "--wait", "--timeout", "1s")
    assert status == ExitStatus.WARNING
    run_id = out.splitlines()[0]
    lines = err.splitlines()
    assert lines.index(f"wfctl: run {run_id}: driving it to its end") < next(
        i for i, line in enumerate(lines) if "waits for hook token 'approve-o-9'" in line
    )
    assert "wfctl hooks resume approve-o-9 JSON" in err
    assert f"continue it with `wfctl run {flow}:approve --id {run_id} --wait`" in err


def test_sigterm_exits_like_ctrl_c_and_says_how_to_continue(world_env, tmp_path) -> None:
    flow = tmp_path / "hook_flow_sigterm.py"
    flow.write_text(HOOK_FLOW)
    env = {**os.environ, "WORKFLOW_POSTGRES_URL": world_env.dsn, "NO_COLOR": "1"}
    env.pop("WFCTL_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfctl", "run", f"{flow}:approve", '["o-7"]', "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # blocks until the run says it waits: no sleep, no timing
        seen.append(line)
        if "waits for hook token 'approve-o-7'" in line:
            break
    run_id = seen[0].split()[2].rstrip(":")
    proc.send_signal(signal.SIGTERM)
    rest, tail = proc.communicate(timeout=60)
    assert proc.returncode == ExitStatus.INTERRUPTED
    assert f"--id {run_id} --wait`" in tail
    assert tail.strip().splitlines()[-1] == "wfctl: interrupted"
    with world_env.connect() as conn:
        row = conn.execute(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row == ("running",) and rest == ""


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
def test_tables_never_cut_ids_at_any_width(monkeypatch, capsys, width) -> None:
    """Ids stay whole at every width: full-width id columns, then optional columns left out
    (said on stderr), then one record per row; an empty table says none."""
    from wfctl.cli.output import Format, Output

    monkeypatch.setenv("COLUMNS", str(width))
    out = Output(format=Format.TEXT, no_color=True)
    run_ids = [ids.prefixed("wrun") for _ in range(3)]
    step_id = ids.prefixed("step")
    rows = [(run_ids[0], "step_completed", step_id, "2026-12-04T05:15:20.406+00:00", None)]
    rows += [(r, "run_created", "", "2026-12-04T05:15:19.169+00:00", None) for r in run_ids[1:]]
    capsys.readouterr()
    out.table(["run", "type", "correlation", "created", "empty"], rows, optional=("created",))
    text, note = capsys.readouterr()
    _assert_whole({*run_ids, step_id}, text, width)
    assert "empty" not in text  # a column empty in every row is left out
    if "created" not in text:
        assert "left out created" in note
    out.table(["run"], [], title="runs")
    assert capsys.readouterr().out == "runs: none\n"
