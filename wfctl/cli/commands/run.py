"""`wfctl run module:workflow`: start a durable Python run and drive it in this process."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import psycopg
import typer

from wfctl import sql
from wfctl.cli import jsonarg, logs
from wfctl.cli.app import State, app, state
from wfctl.cli.output import Format, finite
from wfctl.clock import timestamp
from wfctl.connection.db import connect, query_error, read_only
from wfctl.durations import parse_duration
from wfctl.errors import ExitStatus, RefusedError, UsageError, WfctlError
from wfctl.runtime import executor as ex
from wfctl.runtime import lease as lease_mod
from wfctl.runtime.registry import ArgumentsError, WorkflowDef, Workflows, file_module
from wfctl.runtime.store import Store
from wfctl.world import model

ALLOW_NODE_ENV = "WFCTL_ALLOW_NODE_PEER"


@contextmanager
def runtime_store(
    st: State,
    *,
    allow_node_peer: bool = False,
    queue: bool = False,
    reading: bool = False,
    create_world: bool = True,
    doing: str = "running workflows",
) -> Iterator[Store]:
    """A store on the resolved database (the embedded server, bootstrapped, when no DSN).
    With `queue`, the worker's tables (wfctl's own branch) are added where missing.
    With `reading` (runs list/show), nothing is ever written: no bootstrap, and the store
    lives in one READ ONLY transaction, so a look at a fresh embedded server says "holds no
    world" as `info` and `doctor` do. Without `create_world` (acting on an existing run or
    hook), an embedded server without a world is refused rather than bootstrapped. `doing`
    names the action in an error line ("cancelling run wrun_..."); a privilege error names the
    privileges the role lacks."""
    if reading:
        with connect(st.target, autocommit=True) as conn:
            try:
                with read_only(conn):
                    world = model.inspect(conn, with_drift=False)
                    world.require_known()
                    yield Store(conn, slots=world.has_event_slots)
            except psycopg.Error as exc:
                raise query_error(exc, st.target, "reading runs", conn) from None
        return
    with connect(st.target, autocommit=True) as conn:
        try:
            # imported here: alembic/SQLAlchemy cost ~0.5 s that other commands never need
            from wfctl.world.bootstrap import bootstrap, ensure_worker_schema

            world = model.inspect(conn, with_drift=False)
            if not world.present and st.target.dsn.is_embedded and create_world:
                st.output.message(
                    "wfctl: the embedded PostgreSQL holds no world yet: "
                    "creating a beta.29-shape one (wfctl bootstrap)"
                )
                bootstrap(conn, "beta29")
                world = model.inspect(conn, with_drift=False)
            # the write gate; run, worker, runs fork create runs of wfctl's own shape
            world.require_writable("write runs", "new runs" if create_world else "")
            if not allow_node_peer and os.environ.get(ALLOW_NODE_ENV) != "1":
                refuse_node_peer(conn)
            if queue and ensure_worker_schema(conn):
                st.output.message(
                    "wfctl: added or updated the worker's queue tables (schema wfctl)"
                )
            yield Store(conn, slots=world.has_event_slots)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, doing, conn) from None


def refuse_node_peer(conn: psycopg.Connection[Any]) -> None:
    """Refuse a world a Node deployment also uses (docs/runtime.md, "Sharing a world with a
    Node deployment"; tests/runtime/test_node_peer.py).

    Observed with the real package (world-postgres 5.0.0-beta.29, core 5.0.0-beta.39): a Node
    process's `world.start()` re-enqueues every pending/running run, Python ones included; its
    flow route, whose bundle lacks the Python workflow, writes `run_failed` (RUNTIME_ERROR,
    WorkflowNotRegisteredError) into each within a second and deletes its waits and hooks.
    A failed run is final: nothing can resume it.
    """
    row = conn.execute(sql.load("runtime/node_peers")).fetchone()
    if row is not None and row[0]:
        raise RefusedError(
            "this world has the Node world's queue (graphile_worker): a Node deployment's "
            "startup recovery would fail every pending or running Python run in it "
            "(run_failed, WorkflowNotRegisteredError), for good",
            hint=f"use a separate database, or pass --allow-node-peer ({ALLOW_NODE_ENV}=1) "
            "if no Node world process will ever start on it (docs/runtime.md)",
        )


def load_target(spec: str) -> WorkflowDef:
    """`module:attr` (or `path/to/file.py:attr`) -> the workflow."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"expected MODULE:WORKFLOW, got {spec!r}", hint="e.g. myapp.flows:checkout"
        )
    module = import_module(module_name)
    head, _, rest = attr.partition(".")
    obj: Any = getattr(module, head, None)
    if obj is None:
        raise UsageError(f"module {module_name!r} has no attribute {head!r}")
    if isinstance(obj, Workflows):
        if rest:
            return _find(obj, rest)
        if len(obj.workflows) == 1:
            return next(iter(obj.workflows.values()))
        raise UsageError(
            f"{spec} is a registry with {len(obj.workflows)} workflows",
            hint=f"name one: {module_name}:{head}.<workflow>",
        )
    if isinstance(obj, WorkflowDef):
        return obj
    raise UsageError(f"{spec} is not a workflow (decorate it with @wf.workflow)")


def load_registry(spec: str) -> Workflows:
    """`module` (its one Workflows registry) or `module:attr` (a registry or a workflow)."""
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise UsageError(f"expected MODULE[:ATTR], got {spec!r}", hint="e.g. myapp.flows:wf")
    module = import_module(module_name)
    if attr:
        obj: Any = getattr(module, attr, None)
        if isinstance(obj, Workflows):
            return obj
        if isinstance(obj, WorkflowDef):
            return obj.registry
        raise UsageError(f"{spec} is neither a Workflows registry nor a workflow")
    found = {id(v): v for v in vars(module).values() if isinstance(v, Workflows)}
    if len(found) != 1:
        raise UsageError(
            f"module {module_name!r} holds {len(found)} Workflows registries",
            hint=f"name one: {module_name}:<registry>",
        )
    return next(iter(found.values()))


def import_module(module_name: str) -> Any:
    """A dotted module (from the working directory too) or a path to a .py file.

    A file is loaded under its module path (`registry.file_module`: `pkg/flows.py` in a
    package directory is `pkg.flows`), the name a dotted import of it would give, so a
    workflow's name does not depend on which of the two spellings was used."""
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name).resolve()
            root, dotted = file_module(path)
            if dotted in sys.modules and getattr(sys.modules[dotted], "__file__", None) == str(
                path
            ):
                return sys.modules[dotted]
            if "." in dotted:  # its packages, for the file's relative imports
                if str(root) not in sys.path:
                    sys.path.insert(0, str(root))
                importlib.import_module(dotted.rpartition(".")[0])
            mod_spec = importlib.util.spec_from_file_location(dotted, path)
            if mod_spec is None or mod_spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[dotted] = module
            mod_spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except Exception as exc:  # the operator's module: not found, or it raised at import
        raise UsageError(
            f"cannot import {module_name!r}: {type(exc).__name__}: {exc}".splitlines()[0],
            hint="rerun with -v for the module's traceback",
        ) from exc
    return module


def parse_args(args_json: str | None) -> tuple[list[Any], dict[str, Any] | None]:
    """ARGS: a JSON array (positional), a JSON object (keyword arguments), or one value (the
    only positional argument). A workflow whose one parameter takes an object gets it by
    passing `[{...}]`."""
    if args_json is None:
        return [], None
    parsed = jsonarg.load(args_json, "ARGS", hint="e.g. '[\"o-1\", 42]'")
    if isinstance(parsed, list):
        return parsed, None
    if isinstance(parsed, dict):
        return [], parsed
    return [parsed], None


def check_arguments(wdef: WorkflowDef, args: list[Any], kwargs: dict[str, Any] | None) -> None:
    """Bind ARGS to the workflow's signature; a usage error naming its parameters."""
    try:
        wdef.bind(args, kwargs)
    except ArgumentsError as exc:
        raise _arguments_usage(wdef, exc) from None


def _arguments_usage(wdef: WorkflowDef, exc: ArgumentsError) -> UsageError:
    return UsageError(
        f"ARGS do not fit {exc}",
        hint=f"pass a JSON array in parameter order, or an object by name: {wdef.signature}",
    )


def _find(registry: Workflows, name: str) -> WorkflowDef:
    try:
        return registry.find(name)
    except LookupError as exc:
        raise UsageError(str(exc)) from None


def report_done(st: State, done: ex.Done, created_existing: bool = False) -> None:
    out: dict[str, Any] = {"run_id": done.run_id, "status": done.status}
    if created_existing:
        out["existing"] = True
    if done.status == "completed":
        out["output"] = done.output
    if done.error:
        out["error"] = done.error
    if done.error_code:
        out["error_code"] = done.error_code
    if st.output.format is Format.JSON:
        st.output.json(out)
    else:
        st.output.data(done.run_id)
        line = f"status: {done.status}"
        if done.status == "completed":
            line += f"\noutput: {json.dumps(finite(done.output), default=str, allow_nan=False)}"
        if done.error:
            line += f"\nerror: {done.error_code or ''} {done.error}".rstrip()
        st.output.data(line)


def exit_for(done: ex.Done, waited: bool) -> None:
    if done.status in ("failed", "cancelled"):
        raise typer.Exit(int(ExitStatus.CRITICAL))
    if waited and done.status not in ("completed",):
        raise typer.Exit(int(ExitStatus.WARNING))


@app.command("run")
def run_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(metavar="MODULE:WORKFLOW", help="What to run.")],
    args_json: Annotated[
        str | None,
        typer.Argument(
            metavar="[ARGS]",
            help="Arguments as JSON: an array (by position), an object (by name), or one value.",
        ),
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--id", help="Run id (wrun_<ULID>); an existing run resumes.")
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option("--idempotency-key", help="Start at most one run per key."),
    ] = None,
    detach: Annotated[
        bool,
        typer.Option("--detach", help="Only start the run and leave it to `wfctl worker`s."),
    ] = False,
    queue: Annotated[
        str,
        typer.Option(
            "--queue",
            help="The workers' queue: with --detach the run goes there; otherwise a worker "
            "of it adopts the run if this process dies.",
        ),
    ] = "default",
    lease: Annotated[
        str,
        typer.Option(
            "--lease",
            help="The lease this process holds while it drives the run (renewed every "
            "third of it): after it, a dead process's run goes to a worker.",
        ),
    ] = "15s",
    wait: Annotated[
        bool, typer.Option("--wait", help="Drive to the end, sleeping through durable sleeps.")
    ] = False,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="With --wait: give up after this long.")
    ] = None,
    allow_node_peer: Annotated[
        bool,
        typer.Option(
            "--allow-node-peer",
            help="Run even where a Node world's queue exists (a Node process starting "
            "on this database would fail every active Python run).",
        ),
    ] = False,
    log_format: Annotated[
        str,
        typer.Option("--log-format", envvar="WFCTL_LOG_FORMAT", help=logs.LOG_FORMAT_HELP),
    ] = "text",
    log_level: Annotated[
        str,
        typer.Option("--log-level", envvar="WFCTL_LOG_LEVEL", help=logs.LOG_LEVEL_HELP),
    ] = "INFO",
    otel: Annotated[bool, typer.Option("--otel", help=logs.OTEL_HELP)] = False,
) -> None:
    """Start a durable workflow run and drive it in this process.

    Imports MODULE (a dotted module, or a path to a .py file), finds WORKFLOW (a function
    decorated with @wf.workflow, or a Workflows registry), starts a run in one transaction
    and drives it: steps run here, every transition commits with its event. Without --wait
    it stops when the run blocks on a sleep or a hook (resume it later with --id); with
    --detach it only starts the run and, in the same transaction, hands it to the workers
    of --queue (`wfctl worker`). While this process drives the run it holds a lease on it
    (--lease): if the process dies, a worker of --queue adopts the run once the lease expires;
    a run left blocked on a sleep or a hook is handed to that queue too. Exit 0 completed
    (or left running), 2 failed or cancelled, 3 could not start, 1 still running when
    --timeout expired, 64 ARGS that do not fit the workflow's parameters (checked before
    the run is created: nothing written).

    [bold]Examples[/bold]
      wfctl run docs/examples/checkout.py:checkout '["order-1"]'
      wfctl run docs/examples/checkout.py:checkout '{"order_id": "order-1"}'
      wfctl --format json run myapp.flows:checkout '["o-1"]' --wait --timeout 15m
      wfctl run myapp.flows:checkout '["o-1"]' --idempotency-key o-1 --detach
      wfctl run myapp.flows:checkout '["o-2"]' --detach --queue payments
      wfctl run myapp.flows:checkout --id wrun_01J... --wait
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    flush_spans = logs.setup(st, log_format, otel)
    try:
        _run(st, target, args_json, run_id, idempotency_key, detach, queue, lease, wait, timeout,
             allow_node_peer, log_format, log_level)  # fmt: skip
    finally:
        flush_spans()


def _run(
    st: State,
    target: str,
    args_json: str | None,
    run_id: str | None,
    idempotency_key: str | None,
    detach: bool,
    queue: str,
    lease: str,
    wait: bool,
    timeout: str | None,
    allow_node_peer: bool,
    log_format: str = "text",
    log_level: str = "INFO",
) -> None:
    if detach and wait:
        raise UsageError("--detach and --wait exclude each other")
    if run_id and idempotency_key:
        raise UsageError("--id and --idempotency-key exclude each other")
    limit = parse_duration(timeout).total_seconds() if timeout else None
    lease_s = max(0.3, parse_duration(lease, "--lease").total_seconds())
    wdef = load_target(target)
    logs.user_logging(log_format, log_level)  # after the user's module configured its own
    args, kwargs = parse_args(args_json)
    if args_json is not None or run_id is None:
        # Before connecting: a run is never created with arguments its workflow cannot take
        # (`--id` without ARGS may name an existing run, whose input is already stored).
        check_arguments(wdef, args, kwargs)
    with runtime_store(st, allow_node_peer=allow_node_peer, queue=detach) as store:
        try:
            created = ex.create(
                wdef,
                args,
                kwargs=kwargs,
                run_id=run_id,
                idempotency_key=idempotency_key,
                conn=store.conn,
                queue=queue if detach else None,
            )
        except ArgumentsError as exc:  # a new --id run without (enough) ARGS
            raise _arguments_usage(wdef, exc) from None
        except (ValueError, TypeError) as exc:  # bad input, SerializationError, wrong id
            raise WfctlError(f"could not start the run: {exc}", status=ExitStatus.UNKNOWN) from None
        if created.existing:
            st.output.message(f"wfctl: run {created.run_id} already exists ({created.status})")
        if detach:
            if created.existing and created.status in ("pending", "running"):
                store.enqueue(created.run_id, wdef.name, queue)  # hand an existing run over
            report_done(st, ex.Done(created.run_id, created.status), created.existing)
            return
        again = f"wfctl run {target} --id {created.run_id} --wait"
        if wait:
            st.output.message(f"wfctl: run {created.run_id}: driving it to its end")
        blocked = BlockedReporter(st, store, again if wait else "")
        runner = ex.Executor(wdef.registry, store, log=st.output.debug, on_blocked=blocked)
        try:
            # The run's lease (runtime/lease.py): if this process dies, a `wfctl worker` of
            # --queue adopts the run once the lease has expired.
            with lease_mod.driving(
                store.conn,
                lambda: connect(st.target, autocommit=True),
                created.run_id,
                wdef.name,
                queue=queue,
                lease=lease_s,
                enabled=store.queued,
            ) as (finish, held):
                if store.queued and not held.held:
                    done = ex.Done(created.run_id, "busy", error="a worker holds the run's lease")
                else:
                    done = runner.drive(created.run_id, wait=wait, timeout=limit)
                finish(done)
        except KeyboardInterrupt:
            handed = f" and handed to the workers of queue {queue!r}" if store.queued else ""
            st.output.message(
                f"wfctl: run {created.run_id} is left as it was (durable){handed}; continue"
                f" it with `{again}`"
            )
            raise
        finally:
            runner.close()
    report_done(st, done, created.existing)
    if done.status in ("running", "pending"):
        st.output.message(f"wfctl: run {done.run_id} is not finished; continue it with `{again}`")
    exit_for(done, wait)


CHILD_TOKEN = "wfctl:child:"  # the hooks a parent awaits its children on (children.py)


class BlockedReporter:
    """Says on stderr, once per change, what a blocked run waits on and how it continues
    (`again`: the command that picks the run up, when this process keeps waiting)."""

    def __init__(self, st: State, store: Store, again: str) -> None:
        self.st = st
        self.store = store
        self.again = again
        self.last: list[str] = []

    def __call__(self, run_id: str) -> None:
        params = {"run_id": run_id}
        waits = self.store.conn.execute(sql.load("runtime/run_waits"), params).fetchall()
        hooks = self.store.conn.execute(sql.load("runtime/run_hooks"), params).fetchall()
        lines = [
            f"wfctl: run {run_id} waits for hook token {token!r}: deliver a payload with"
            f" `wfctl hooks resume {token} JSON`"
            for _, token, _ in hooks
            if not str(token).startswith(CHILD_TOKEN)
        ]
        if any(str(token).startswith(CHILD_TOKEN) for _, token, _ in hooks):
            from wfctl.runtime import children  # only for a parent of child workflows

            lines += [
                f"wfctl: run {run_id} waits for its child run {child}: `wfctl worker`"
                " processes of the child's queue drive it (docs/runtime.md, Child workflows)"
                for child in children.waiting_for(self.store, run_id)
            ]
        lines += [
            f"wfctl: run {run_id} sleeps until {timestamp(resume_at)}"
            for _, status, resume_at, _ in waits
            if status == "waiting" and resume_at is not None
        ]
        if lines and lines != self.last:
            for line in lines:
                self.st.output.message(line)
            if self.again:  # --wait: this process keeps waiting, say how to leave safely
                self.st.output.message(
                    f"wfctl: Ctrl-C leaves the run durable; continue it later with `{self.again}`"
                )
        self.last = lines
