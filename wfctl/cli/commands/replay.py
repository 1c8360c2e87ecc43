"""`wfctl runs replay`: replay recorded runs against the current code, writing nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from wfctl import sql
from wfctl.cli.app import state
from wfctl.cli.commands.run import load_registry, runtime_store
from wfctl.cli.output import Format
from wfctl.durations import parse_duration
from wfctl.errors import ExitStatus, UsageError
from wfctl.runtime.registry import WorkflowDef, Workflows

# registered on `wfctl runs` by wfctl.cli.commands.runs (this module imports nothing of it)


def replay_command(
    ctx: typer.Context,
    run_ids: Annotated[
        list[str] | None, typer.Argument(metavar="RUN_ID", show_default=False)
    ] = None,
    against: Annotated[
        str,
        typer.Option(
            "--against",
            metavar="MODULE:WORKFLOW",
            help="The current code: a workflow (module:workflow), a registry (module:wf) or "
            "a module with one registry.",
        ),
    ] = "",
    all_finished: Annotated[
        bool,
        typer.Option(
            "--all-finished",
            help="Also replay the finished (completed or failed) runs of those workflows.",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="DURATION", help="With --all-finished: runs created this recently."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="With --all-finished: at most this many runs.")
    ] = 100,
) -> None:
    """Replay recorded runs against the current code and report divergence, writing nothing.

    Each run's log is fed to the workflow code in one READ ONLY transaction (no step body
    runs). Exit status 0 when every run replays, 1 when any diverges or cannot be replayed.

    [bold]Examples[/bold]
      wfctl runs replay wrun_01J... --against shop.flows:checkout
      wfctl runs replay --all-finished --since 7d --against shop.flows:wf
      wfctl --format json runs replay wrun_01J... --against shop.flows:checkout
    """
    from wfctl.runtime.replay import replay_one

    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.MARKDOWN, Format.JSON)
    if not against:
        raise UsageError("--against is required", hint="e.g. --against shop.flows:checkout")
    if not run_ids and not all_finished:
        raise UsageError("name runs to replay, or --all-finished", hint="see --help")
    if since is not None and not all_finished:
        raise UsageError("--since needs --all-finished")
    window = None
    if since is not None:
        try:
            window = parse_duration(since)
        except ValueError as exc:
            raise UsageError(f"--since: {exc}") from None
    target = _against(against)
    names = _names(target)
    with runtime_store(st, reading=True) as store:
        ids = list(dict.fromkeys(run_ids or []))
        if all_finished:
            cutoff = None
            if window is not None:
                row = store.conn.execute("SELECT localtimestamp").fetchone()
                cutoff = (row[0] if row else datetime.now()) - window
            found = store.conn.execute(
                sql.load("runtime/finished_runs"),
                {"names": names, "since": cutoff, "limit": limit},
            ).fetchall()
            ids += [str(r[0]) for r in found if str(r[0]) not in ids]
        results = [replay_one(store, run_id, target) for run_id in ids]
    failed = [r for r in results if not r.ok]
    if fmt is Format.JSON:
        st.output.json(
            {
                "against": against,
                "replayed": len(results) - len(failed),
                "diverged": sum(r.verdict == "diverged" for r in results),
                "errors": sum(r.verdict == "error" for r in results),
                "runs": [r.as_dict() for r in results],
            }
        )
    else:
        st.output.table(
            ["run", "verdict", "status", "events", "event", "message"],
            [[r.run_id, r.verdict, r.status, r.events, r.event_id, r.message] for r in results],
            title="replay",
            optional=["events", "event"],
        )
        st.output.message(
            f"wfctl: {len(results) - len(failed)} of {len(results)} run(s) replay against "
            f"{against}" + (f"; {len(failed)} do not" if failed else "")
        )
    raise typer.Exit(int(ExitStatus.WARNING if failed else ExitStatus.OK))


def _against(spec: str) -> WorkflowDef | Workflows:
    """A workflow (`module:workflow`) or a registry (`module`, `module:registry`)."""
    from wfctl.cli.commands.run import import_module

    module_name, sep, attr = spec.partition(":")
    if sep and attr:
        obj = getattr(import_module(module_name), attr, None)
        if isinstance(obj, WorkflowDef | Workflows):
            return obj
        raise UsageError(f"--against {spec}: neither a workflow nor a Workflows registry")
    return load_registry(spec)


def _names(target: WorkflowDef | Workflows) -> list[str]:
    if isinstance(target, Workflows):
        return target.served_names()
    return [target.name, *target.aliases]
