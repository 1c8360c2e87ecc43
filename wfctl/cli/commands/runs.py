"""`wfctl runs list/show/cancel`: look at and stop runs (any runtime's, Python or Node)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wfctl import sql
from wfctl.cli.app import app, state
from wfctl.cli.commands.run import runtime_store
from wfctl.cli.output import Format, timestamp
from wfctl.errors import ExitStatus, UsageError, WfctlError
from wfctl.runtime import serde
from wfctl.runtime.engine import short_name
from wfctl.world import codec

runs_app = typer.Typer(
    help="List, inspect and cancel workflow runs.\n\n[bold]Examples[/bold]\n"
    "  wfctl runs list --status running\n  wfctl runs show wrun_01J...\n"
    "  wfctl runs cancel wrun_01J... --reason 'customer asked'",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(runs_app, name="runs")

STATUSES = ("pending", "running", "completed", "failed", "cancelled")


def show_value(value: Any) -> Any:
    """A payload for display: `devl` bytes decoded, other bytes described."""
    if isinstance(value, bytes | bytearray):
        try:
            return serde.loads(bytes(value))
        except (ValueError, UnicodeDecodeError):
            return codec.describe(value)
    if isinstance(value, dict):
        return {k: show_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [show_value(v) for v in value]
    return value


@runs_app.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Only workflow names containing this.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 50,
) -> None:
    """List runs, newest first.

    [bold]Examples[/bold]
      wfctl runs list
      wfctl runs list --status failed --name checkout
      wfctl --format json runs list --limit 10
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.MARKDOWN, Format.JSON)
    if status is not None and status not in STATUSES:
        raise UsageError(f"unknown status {status!r}", hint=f"one of: {', '.join(STATUSES)}")
    with runtime_store(st, reading=True) as store:
        rows = store.conn.execute(
            sql.load("runtime/list_runs"), {"status": status, "name": name, "limit": limit}
        ).fetchall()
    items = [
        {
            "id": r[0],
            "status": r[1],
            "name": r[2],
            "created_at": timestamp(store.aware(r[3])),
            "completed_at": timestamp(r[4]),
            "error_code": r[5],
        }
        for r in rows
    ]
    if fmt is Format.JSON:
        st.output.json(items)
        return
    st.output.table(
        ["id", "status", "workflow", "created", "error"],
        [
            (i["id"], i["status"], short_name(i["name"]), i["created_at"], i["error_code"])
            for i in items
        ],
    )


@runs_app.command("show")
def show_run(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID")],
) -> None:
    """Show one run: its row, steps, waits, hooks and events, payloads decoded.

    [bold]Examples[/bold]
      wfctl runs show wrun_01J...
      wfctl --format json runs show wrun_01J... | jq '.events[].type'
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with runtime_store(st, reading=True) as store:
        run = store.read_run(run_id)
        if run is None:
            raise WfctlError(f"no run {run_id}", hint="`wfctl runs list` shows the runs")
        params = {"run_id": run_id}
        steps = store.conn.execute(sql.load("runtime/run_steps"), params).fetchall()
        waits = store.conn.execute(sql.load("runtime/run_waits"), params).fetchall()
        hooks = store.conn.execute(sql.load("runtime/run_hooks"), params).fetchall()
        events = store.read_events(run_id)
    report: dict[str, Any] = {
        "id": run.id,
        "status": run.status,
        "workflow": run.name,
        "deployment_id": run.deployment_id,
        "spec_version": run.spec_version,
        "created_at": timestamp(run.created_at),
        "completed_at": timestamp(run.completed_at),
        "input": show_value(run.input),
        "output": show_value(run.output),
        "error": show_value(run.error),
        "error_code": run.error_code,
        "attributes": run.attributes,
        "steps": [
            {
                "step_id": s[0],
                "name": s[1],
                "status": s[2],
                "attempt": s[3],
                "output": show_value(codec.decode(s[4])),
                "error": show_value(codec.decode(s[5])),
                "retry_after": timestamp(s[6]),
            }
            for s in steps
        ],
        "waits": [{"wait_id": w[0], "status": w[1], "resume_at": timestamp(w[2])} for w in waits],
        "hooks": [{"hook_id": h[0], "token": h[1]} for h in hooks],
        "events": [
            {
                "id": e.id,
                "type": e.type,
                "correlation_id": e.correlation_id,
                "created_at": timestamp(e.created_at),
                "data": show_value(e.data),
            }
            for e in events
        ],
    }
    if fmt is Format.JSON:
        st.output.json(report)
        return
    lines = [
        f"run:       {run.id}  ({run.status})",
        f"workflow:  {run.name}",
        f"input:     {report['input']}",
    ]
    if run.status == "completed":
        lines.append(f"output:    {report['output']}")
    if run.error is not None:
        lines.append(f"error:     {run.error_code} {report['error']}")
    st.output.data("\n".join(lines))
    if report["steps"]:
        st.output.table(
            ["step", "name", "status", "attempt"],
            [
                (s["step_id"], short_name(s["name"]), s["status"], s["attempt"])
                for s in report["steps"]
            ],
            title="steps",
        )
    if report["waits"] or report["hooks"]:
        st.output.table(
            ["entity", "state"],
            [(w["wait_id"], f"{w['status']} until {w['resume_at']}") for w in report["waits"]]
            + [(h["hook_id"], f"token {h['token']}") for h in report["hooks"]],
            title="waits and hooks",
        )
    st.output.table(
        ["event", "type", "correlation", "created"],
        [
            (e["id"], e["type"], e["correlation_id"] or "", e["created_at"])
            for e in report["events"]
        ],
        title="events",
        optional=("created",),
    )


@runs_app.command("cancel")
def cancel_run(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID")],
    reason: Annotated[
        str | None, typer.Option("--reason", help="Recorded in run_cancelled (<= 512 chars).")
    ] = None,
) -> None:
    """Cancel a pending or running run: its row, waits, hooks and run_cancelled in one
    transaction. Exit 0 cancelled, 2 when the run had already ended.

    [bold]Examples[/bold]
      wfctl runs cancel wrun_01J... --reason "duplicate order"
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with runtime_store(st, allow_node_peer=True, create_world=False) as store:
        try:
            before = store.cancel(run_id, reason)
        except LookupError as exc:
            raise WfctlError(str(exc), hint="`wfctl runs list` shows the runs") from None
    cancelled = before not in ("completed", "failed", "cancelled")
    if st.output.format is Format.JSON:
        st.output.json({"run_id": run_id, "cancelled": cancelled, "status_before": before})
    else:
        st.output.data(
            f"{run_id}: cancelled" if cancelled else f"{run_id}: already {before}, not changed"
        )
    if not cancelled:
        raise typer.Exit(int(ExitStatus.CRITICAL))
