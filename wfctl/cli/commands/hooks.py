"""`wfctl hooks resume TOKEN [JSON]`: deliver a payload to a workflow waiting on a hook."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wfctl.cli import jsonarg
from wfctl.cli.app import app, state
from wfctl.cli.commands.run import runtime_store
from wfctl.cli.output import Format
from wfctl.errors import ExitStatus, WfctlError
from wfctl.ops import wakeup
from wfctl.runtime import serde
from wfctl.runtime.store import GuardError
from wfctl.world import model

hooks_app = typer.Typer(
    help="Resume workflows waiting on hooks.\n\n[bold]Examples[/bold]\n"
    "  wfctl hooks resume approve-o-1 '{\"approved\": true}'",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(hooks_app, name="hooks")


@hooks_app.command("resume")
def resume_hook(
    ctx: typer.Context,
    token: Annotated[str, typer.Argument(metavar="TOKEN")],
    payload_json: Annotated[
        str | None, typer.Argument(metavar="[JSON]", help="The payload (JSON); null if absent.")
    ] = None,
) -> None:
    """Record a payload for the hook holding TOKEN (hook_received, in one transaction that
    locks the run). The run continues in the process driving it (`wfctl run ... --wait`), or
    the next time it is driven (`wfctl run MODULE:WORKFLOW --id RUN_ID`). For a run the
    package drives (4.x, beta.29 worlds with its queue), the same transaction enqueues the
    run's wake-up job on `<prefix>flows` (WORKFLOW_POSTGRES_JOB_PREFIX, default workflow_),
    as the package's resumeHook() does.
    Exit 0 delivered, 2 when the run has ended, 3 when no hook holds the token.

    [bold]Examples[/bold]
      wfctl hooks resume approve-o-1 '{"approved": true}'
      wfctl --format json hooks resume approve-o-1 '"yes"'
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    payload: Any = None
    if payload_json is not None:
        payload = jsonarg.load(payload_json, "the payload")
    data = serde.dumps(payload, "a hook payload")
    with runtime_store(st, allow_node_peer=True, create_world=False) as store:
        world = model.inspect(store.conn, with_drift=False)
        world.require_known()  # nothing is written to a world wfctl does not know whole
        woken: list[int] = []

        def wake(conn: Any, run_id: str) -> None:
            if wakeup.needed(world):  # a package run: as the package's resumeHook() does
                job = wakeup.enqueue(conn, world, run_id, wakeup.job_prefix())
                woken.extend([job] if job is not None else [])

        try:
            run_id, hook_id = store.resume_hook(token, data, then=wake)
        except LookupError as exc:
            raise WfctlError(
                str(exc), hint="the run may have ended, or the token is wrong"
            ) from None
        except GuardError as exc:
            raise WfctlError(str(exc), status=ExitStatus.CRITICAL) from None
    if st.output.format is Format.JSON:
        st.output.json(
            {"run_id": run_id, "hook_id": hook_id, "token": token, "wake_up_jobs": woken}
        )
    else:
        woke = f"; wake-up job {woken[0]} enqueued for the package's workers" if woken else ""
        st.output.data(f"{run_id}: hook {hook_id} received a payload{woke}")
