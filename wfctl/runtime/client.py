"""The Python client: hand runs to workers, look them up, cancel them, resume hooks, and wait
for a run's end whoever drives it.

    from wfctl.runtime import Client

    client = Client()                       # same DSN precedence as the CLI
    handle = client.enqueue(checkout, "o-1", idempotency_key="o-1")
    print(handle.id)                        # known before enqueue returns (committed)
    output = handle.result(timeout=60)      # waits (LISTEN/NOTIFY) for a worker to end it
    client.resume_hook("approve-o-1", {"approved": True})

`AsyncClient` has the same methods as coroutines. `enqueue` writes the run and its queue row in
one transaction (the run id is minted here, so it is known before the commit returns) and
leaves the driving to `wfctl worker` processes. `result()` LISTENs on `wfctl_run_end` (every
terminal transaction of the runtime notifies it, with the run id: never per step), then reads
the run's row, so an end committed before the LISTEN is seen too; a run ended by a writer that
does not notify (the Node package, a repair) is seen at the next re-read, every
`FALLBACK_SECONDS`. Outcomes other than `completed` raise the typed errors of
`wfctl.runtime.errors`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, overload

import psycopg
from typing_extensions import ParamSpec, TypeVar

from wfctl import sql
from wfctl.runtime import serde, tracing, values
from wfctl.runtime.errors import (
    ConnectionError,
    DecodeError,
    HookNotFoundError,
    RunCancelledError,
    RunEndedError,
    RunFailedError,
    RunNotFoundError,
    RunTimeoutError,
    WorkflowError,
)
from wfctl.runtime.registry import RunOptions, WorkflowDef, parse_duration
from wfctl.runtime.store import TERMINAL, GuardError, Store
from wfctl.world import codec, ids

if TYPE_CHECKING:
    from wfctl.connection.db import Target

ALLOW_NODE_ENV = "WFCTL_ALLOW_NODE_PEER"
CHANNEL = "wfctl_run_end"  # sql/runtime/finish_run.sql notifies it with the run id
DEFAULT_QUEUE = "default"
# Re-read a waited-for run this often without a notification (a writer that does not
# notify: the Node package, a repair, a server restart that lost the listener).
FALLBACK_SECONDS = 5.0

# Kept early deliveries (`resume_hook(..., keep=...)`): how long by default, on a world no
# Node deployment shares (docs/api.md, "Deliveries before the hook exists").
DEFAULT_KEEP_SECONDS = 3600.0
STATUSES = ("pending", "running", "completed", "failed", "cancelled")

Connect = Callable[[], psycopg.Connection[Any]]
P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)


# --- run state -------------------------------------------------------------------------------


@dataclass
class RunState:
    """A run's row as a client sees it (payloads still encoded)."""

    id: str
    status: str
    name: str
    output: bytes | None
    error: bytes | None
    error_code: str | None
    created_at: datetime | None
    completed_at: datetime | None
    cancel_reason: str | None = None

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> RunState:
        rid, status, name, out, err, code, created, completed, cancelled = row
        reason = None
        if cancelled is not None:
            data = codec.decode(cancelled)
            if isinstance(data, dict) and data.get("cancelReason") is not None:
                reason = str(data["cancelReason"])
        return cls(
            str(rid),
            str(status),
            str(name),
            codec.decode(out),
            codec.decode(err),
            None if code is None else str(code),
            created,
            completed,
            reason,
        )


def read_state(conn: psycopg.Connection[Any], run_id: str) -> RunState | None:
    row = conn.execute(sql.load("runtime/run_state"), {"run_id": run_id}).fetchone()
    return None if row is None else RunState.of(row)


def _error_text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return serde.error_message(serde.loads(data))
    except serde.PayloadUnreadable as exc:
        return str(exc)


@dataclass
class _Handle(Generic[R]):
    """What every handle shows: the run's id and, as last read, its status and outcome.
    Generic in the workflow's return type: `result()` returns it, decoded to the return
    annotation by `WorkflowDef.decode_output` (one path for every handle, a child's await
    and `wfctl.testing`); a handle made from a workflow NAME has no annotation to decode
    to, and returns the plain form."""

    id: str
    workflow: WorkflowDef[Any, R] | None = None
    status: str = "pending"
    output: Any = None  # decoded to the return annotation once the run completed
    error: str | None = None
    error_code: str | None = None
    name: str | None = None  # the stored workflow name
    created_at: datetime | None = None
    completed_at: datetime | None = None
    cancel_reason: str | None = None
    _raw_output: bytes | None = field(default=None, repr=False)
    _decode_error: DecodeError | None = field(default=None, repr=False)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def _apply(self, state: RunState) -> None:
        self.status = state.status
        self.name = state.name
        self.error_code = state.error_code
        self.error = _error_text(state.error)
        self.created_at = state.created_at
        self.completed_at = state.completed_at
        self.cancel_reason = state.cancel_reason
        if state.status == "completed" and state.output != self._raw_output:
            self._raw_output = state.output
            try:
                self._set_output(serde.loads(state.output))
            except serde.PayloadUnreadable as exc:  # e.g. an encrypted Node payload
                self.output = None
                self.error = f"output unreadable: {exc}"

    def _set_output(self, plain: Any) -> None:
        """The stored output (plain, as serde reads it) decoded to the return annotation."""
        self._decode_error = None
        if self.workflow is None:
            self.output = plain
            return
        try:
            self.output = self.workflow.decode_output(plain)
        except DecodeError as exc:
            self.output, self._decode_error = plain, exc

    def _outcome(self) -> R:
        """The output, or the typed error for a run that did not complete."""
        if self.status == "completed":
            if self._decode_error is not None:
                raise DecodeError(
                    f"run {self.id}: output does not fit the return annotation:"
                    f" {self._decode_error}",
                    run_id=self.id,
                )
            output: R = self.output
            return output
        if self.status == "failed":
            raise RunFailedError(self.id, self.error, self.error_code)
        if self.status == "cancelled":
            raise RunCancelledError(self.id, self.cancel_reason)
        raise WorkflowError(f"run {self.id} is {self.status}", run_id=self.id)


def _next_wait(handle: _Handle[Any], deadline: float | None, timeout: float | None) -> float:
    """How long to wait for the run's NOTIFY before reading it again (the fallback for ends
    no NOTIFY announces); RunTimeoutError once `timeout` has passed."""
    if deadline is None:
        return FALLBACK_SECONDS
    left = deadline - time.monotonic()
    if left <= 0:
        raise RunTimeoutError(handle.id, timeout or 0.0, handle.status)
    return min(FALLBACK_SECONDS, left)


def _listen_sync(conn: psycopg.Connection[Any], handle: _Handle[R], timeout: float | None) -> R:
    """Wait on `conn` (LISTEN first, then read) until the run ends; its output or error."""
    conn.execute(f"LISTEN {CHANNEL}")
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        state = read_state(conn, handle.id)  # after LISTEN: an end committed before is seen
        if state is None:
            raise RunNotFoundError(f"no run {handle.id}", run_id=handle.id)
        handle._apply(state)
        if handle.done:
            return handle._outcome()
        wait = _next_wait(handle, deadline, timeout)
        for note in conn.notifies(timeout=wait):
            if note.payload == handle.id:
                break


async def _listen_async(
    conn: psycopg.AsyncConnection[Any], handle: _Handle[R], timeout: float | None
) -> R:
    await conn.execute(f"LISTEN {CHANNEL}")
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        cur = await conn.execute(sql.load("runtime/run_state"), {"run_id": handle.id})
        row = await cur.fetchone()
        if row is None:
            raise RunNotFoundError(f"no run {handle.id}", run_id=handle.id)
        handle._apply(RunState.of(row))
        if handle.done:
            return handle._outcome()
        wait = _next_wait(handle, deadline, timeout)
        async for note in conn.notifies(timeout=wait):
            if note.payload == handle.id:
                break


class RunHandle(_Handle[R]):
    """A run: its id, and as last read its `status`, `output` (decoded), `error`,
    `error_code`. `await handle.result(timeout=None)` waits for its end.

    From `start()`, `result()` drives the run in this process (holding its lease: if the
    process dies, a worker adopts it), or, when another process already drives it, waits for
    that one. From `AsyncClient`, it waits for whoever drives the run (LISTEN/NOTIFY)."""

    def __init__(
        self,
        id: str,
        workflow: WorkflowDef[Any, R] | None = None,
        status: str = "pending",
        *,
        client: AsyncClient | None = None,
        drive: bool = False,
        queue: str = DEFAULT_QUEUE,
    ) -> None:
        super().__init__(id, workflow, status)
        self._client = client
        self._drive = drive
        self._queue = queue

    async def result(self, timeout: float | None = None) -> R:
        """The run's output once it ends; `RunFailedError`, `RunCancelledError`, or
        `RunTimeoutError` (the run goes on) after `timeout` seconds."""
        if self._drive and self.workflow is not None:
            from wfctl.runtime import executor

            wdef = self.workflow
            started = time.monotonic()
            done = await asyncio.to_thread(
                executor.drive_to_end,
                wdef.registry,
                self.id,
                timeout,
                name=wdef.name,
                queue=self._queue,
            )
            if done.status != "busy":
                self.status, self.error, self.error_code = done.status, done.error, done.error_code
                if done.status == "completed":
                    self._set_output(done.output)
                elif done.status == "cancelled":
                    self._apply(await asyncio.to_thread(self._read_default))
                elif done.status not in TERMINAL:
                    raise RunTimeoutError(self.id, timeout or 0.0, done.status)
                return self._outcome()
            # Another process drives it: wait for that one.
            if timeout is not None:
                timeout = max(0.0, timeout - (time.monotonic() - started))
        if self._client is not None:
            return await self._client._wait(self, timeout)
        return await asyncio.to_thread(self._wait_default, timeout)

    def _wait_default(self, timeout: float | None) -> R:
        from wfctl.runtime import executor

        registry = self.workflow.registry if self.workflow is not None else None
        conn = executor._default_connection(registry)
        try:
            return _listen_sync(conn, self, timeout)
        finally:
            conn.close()

    async def refresh(self) -> RunHandle[R]:
        """Read the run's row again."""
        if self._client is not None:
            state = await self._client._state(self.id)
        else:
            state = await asyncio.to_thread(self._read_default)
        self._apply(state)
        return self

    def _read_default(self) -> RunState:
        from wfctl.runtime import executor

        conn = executor._default_connection(self.workflow.registry if self.workflow else None)
        try:
            state = read_state(conn, self.id)
        finally:
            conn.close()
        if state is None:
            raise RunNotFoundError(f"no run {self.id}", run_id=self.id)
        return state


class SyncRunHandle(_Handle[R]):
    """A run handle of the synchronous `Client`: `result()` blocks until the run ends."""

    def __init__(
        self, id: str, client: Client, workflow: WorkflowDef[Any, R] | None = None
    ) -> None:
        super().__init__(id, workflow)
        self._client = client

    def result(self, timeout: float | None = None) -> R:
        """Block until the run ends (LISTEN/NOTIFY): its output, or a typed error."""
        return self._client._wait(self, timeout)

    def refresh(self) -> SyncRunHandle[R]:
        """Read the run's row again."""
        self._apply(self._client._state(self.id))
        return self


class RunPage(list[Any]):
    """One page of `list()`: the handles, and `next_cursor` (pass it as `after=` for the
    next page; None on the last page)."""

    next_cursor: str | None = None


# --- the clients -------------------------------------------------------------------------


def _resolve(dsn: str | None) -> Target:
    from wfctl.connection.db import Target
    from wfctl.connection.dsn import resolve_dsn

    try:
        return Target(resolve_dsn(dsn))
    except Exception as exc:  # the CLI's wording names flags: say it as the library's
        raise ConnectionError(_library_words(exc)) from None


def _library_words(exc: BaseException) -> str:
    """A connection failure said as the library's: no CLI flag names (the CLI's `--dsn` is
    `Client(dsn=...)` here), with what to try next when wfctl knows it."""
    text = str(exc).replace("from --dsn", "from Client(dsn=...)").replace("--dsn", "dsn=")
    hint = getattr(exc, "hint", None)
    return f"{text} ({hint})" if hint and "--" not in hint else text


def _status(status: str | None) -> str | None:
    if status is not None and status not in STATUSES:
        raise ValueError(f"not a run status: {status!r} (one of {', '.join(STATUSES)})")
    return status


def _names(workflow: WorkflowDef[Any, Any] | str | None) -> list[str] | None:
    if workflow is None:
        return None
    if isinstance(workflow, WorkflowDef):
        return [workflow.name, *workflow.aliases]
    return [workflow]


class Client:
    """A synchronous client on one connection (opened on first use; thread-safe: calls
    are serialised). `dsn`: like `wfctl --dsn`, else WFCTL_DATABASE_URL, WORKFLOW_POSTGRES_URL,
    DATABASE_URL, libpq's PG* variables, then the embedded server."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        connect: Connect | None = None,
        allow_node_peer: bool = False,
    ) -> None:
        self._target: Target | None = None if connect is not None else _resolve(dsn)
        self._connect_fn = connect
        self._conn: psycopg.Connection[Any] | None = None
        self._store: Store | None = None
        self._lock = threading.RLock()
        # As `wfctl run`/`worker`: refuse to create runs where a Node deployment's startup
        # recovery would fail them (docs/runtime.md, "Sharing a world with a Node deployment").
        self._peer_checked = allow_node_peer or os.environ.get(ALLOW_NODE_ENV) == "1"

    def connect(self) -> psycopg.Connection[Any]:
        """A new autocommit session to the client's database (`ConnectionError`, a
        `WorkflowError`, when it cannot be opened)."""
        if self._connect_fn is not None:
            return self._connect_fn()
        from wfctl.connection.db import connect

        assert self._target is not None
        try:
            return connect(self._target, autocommit=True)
        except (psycopg.OperationalError, OSError) as exc:
            raise ConnectionError(_library_words(exc)) from None
        except Exception as exc:
            if type(exc).__module__.startswith("wfctl"):  # wfctl's own connection errors
                raise ConnectionError(_library_words(exc)) from None
            raise

    @contextmanager
    def _session(self) -> Iterator[Store]:
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = self.connect()
                self._store = None
            if self._store is None:
                self._store = Store(self._conn)
            try:
                yield self._store
            except psycopg.OperationalError:
                self._conn.close()
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn, self._store = None, None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- runs --

    @overload
    def enqueue(
        self, workflow: WorkflowDef[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> SyncRunHandle[R]: ...

    @overload
    def enqueue(self, workflow: str, /, *args: Any, **kwargs: Any) -> SyncRunHandle[Any]: ...

    def enqueue(
        self, workflow: WorkflowDef[Any, Any] | str, /, *args: Any, **kwargs: Any
    ) -> SyncRunHandle[Any]:
        """Create a run and hand it to the workers of its queue (default "default") in one
        transaction; returns at once with its handle, generic in the workflow's return type.
        `workflow`: a workflow, called with its own positional and keyword arguments
        (type-checked), or a stored workflow name (`workflow//py:module//function`: a web
        process need not import the workflows; its handle returns the plain output).
        Options: `client.enqueue(checkout.options(idempotency_key=k, queue="orders"), ...)`
        (the keywords `idempotency_key=`/`queue=` are still taken as options when the
        workflow has no parameter of that name). With an idempotency key, the run of that
        key is returned if it was started with the same arguments (and handed to the queue
        if it is still active); other arguments raise `IdempotencyConflictError`."""
        if isinstance(workflow, WorkflowDef):
            options, kwargs = workflow.split_options(kwargs)
            name, data, wdef = workflow.name, workflow.encode_input(list(args), kwargs), workflow
        else:
            options = RunOptions(
                kwargs.pop("idempotency_key", None),
                kwargs.pop("queue", None),
                traceparent=kwargs.pop("traceparent", None),
                tracestate=kwargs.pop("tracestate", None),
            )
            if kwargs:
                raise TypeError(
                    f"enqueue({workflow!r}, ...): keyword arguments need the workflow itself"
                    " (a stored name has no signature to bind them to)"
                )
            name, wdef = workflow, None
            data = serde.dumps(list(args), f"the input of workflow {workflow}")
        return self._enqueue(name, data, wdef, options)

    def _enqueue(
        self, name: str, data: bytes, wdef: WorkflowDef[Any, Any] | None, options: RunOptions
    ) -> SyncRunHandle[Any]:
        queue = options.queue or DEFAULT_QUEUE
        idempotency_key = options.idempotency_key
        with self._session() as store:
            if not store.queued:
                raise WorkflowError(
                    "this database has no worker queue (schema wfctl): `wfctl bootstrap` adds it"
                )
            self._check_peer(store)
            # -- trace context (tracing.enqueue): the carrier goes into executionContext
            with tracing.enqueue(
                name, traceparent=options.traceparent, tracestate=options.tracestate, queue=queue
            ) as traced:
                created = store.create_run(
                    options.run_id or ids.prefixed("wrun"),
                    name,
                    data,
                    idempotency_key=idempotency_key,
                    queue=queue,
                    trace_carrier=traced.carrier,
                )
                traced.created(created.run_id)
            if created.existing and created.status not in TERMINAL:
                store.enqueue(created.run_id, name, queue)
        handle: SyncRunHandle[Any] = SyncRunHandle(created.run_id, self, wdef)
        handle.status = created.status
        handle.name = name
        return handle

    def _check_peer(self, store: Store) -> None:
        if self._peer_checked:
            return
        if self._node_peer(store):
            raise WorkflowError(
                "this world has the Node world's queue (graphile_worker): a Node "
                "deployment's startup recovery would fail every active Python run in "
                f"it; use a separate database, or Client(allow_node_peer=True) "
                f"({ALLOW_NODE_ENV}=1) if no Node world process will ever start on it"
            )
        self._peer_checked = True

    @staticmethod
    def _node_peer(store: Store) -> bool:
        row = store.conn.execute(sql.load("runtime/node_peers")).fetchone()
        return bool(row is not None and row[0])

    @overload
    def get(self, run_id: str, workflow: None = None) -> SyncRunHandle[Any]: ...

    @overload
    def get(self, run_id: str, workflow: WorkflowDef[Any, R]) -> SyncRunHandle[R]: ...

    def get(self, run_id: str, workflow: WorkflowDef[Any, Any] | None = None) -> SyncRunHandle[Any]:
        """The run's handle, read now (`RunNotFoundError` if there is none). With
        `workflow`, its output is decoded to that workflow's return annotation."""
        handle: SyncRunHandle[Any] = SyncRunHandle(run_id, self, workflow)
        handle._apply(self._state(run_id))
        return handle

    def list(
        self,
        status: str | None = None,
        workflow: WorkflowDef[Any, Any] | str | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> RunPage:
        """Runs newest first, optionally of one status (`pending`, `running`, `completed`,
        `failed`, `cancelled`; anything else is a `ValueError`) and workflow; `after`: the
        previous page's `next_cursor`."""
        params = {
            "status": _status(status),
            "names": _names(workflow),
            "after": after,
            "limit": limit,
        }
        wdef = workflow if isinstance(workflow, WorkflowDef) else None
        with self._session() as store:
            rows = store.conn.execute(sql.load("runtime/page_runs"), params).fetchall()
        page = RunPage()
        for row in rows:
            handle: SyncRunHandle[Any] = SyncRunHandle(str(row[0]), self, wdef)
            handle._apply(RunState.of(row))
            page.append(handle)
        page.next_cursor = page[-1].id if len(page) == limit and page else None
        return page

    def cancel(
        self, run_id: str, reason: str | None = None, *, graceful: bool = False
    ) -> SyncRunHandle[Any]:
        """Cancel the run (`run_cancelled`, one transaction); a run that had already ended is
        left as it is. Returns its handle, read after. With `graceful`, only ask: the workflow
        gets `CancelledError` at its next await, may run cleanup steps, and the run ends
        `cancelled` once it lets the error out (docs/runtime.md, Cancellation); wait with
        `handle.result()` (it raises `RunCancelledError` then, with the reason)."""
        with self._session() as store:
            try:
                if graceful:
                    store.request_cancel(run_id, reason)
                else:
                    store.cancel(run_id, reason)
            except LookupError:
                raise RunNotFoundError(f"no run {run_id}", run_id=run_id) from None
        return self.get(run_id)

    def resume_hook(
        self,
        token: str,
        payload: Any = None,
        *,
        keep: str | float | timedelta | bool | None = True,
    ) -> str | None:
        """Deliver `payload` to the hook holding `token` (`hook_received`, one transaction;
        a queued run is woken at once). Returns the run id.

        - A typed hook (`create_hook(payload_type=Shipment)`) validates the payload first
          where `Shipment`'s module is imported in this process: `DecodeError`, nothing
          written, the run untouched.
        - The hook's run has ended: `RunEndedError` (a `WorkflowError`), nothing written.
        - No hook holds the token yet: the delivery is KEPT (`keep`: a duration, default
          1 hour; True: the default) and handed over exactly once when a wfctl run creates
          a hook with the token; returns None then. `keep=False`/`0`/`None`:
          `HookNotFoundError` instead, as on a world a Node deployment shares (its runs
          never read wfctl's inbox) unless `keep` is given as a duration.
        """
        data = serde.dumps(payload, "a hook payload")
        with self._session() as store:
            self._validate_payload(store, token, data)
            try:
                run_id, _ = store.resume_hook(token, data)
                return run_id
            except GuardError as exc:
                return self._ended(store, token, exc)
            except LookupError:
                pass
            seconds = self._keep_seconds(store, keep)
            if seconds is None or not store.hook_tables:
                raise HookNotFoundError(f"no active hook with token {token!r}") from None
            store.keep_delivery(token, data, seconds)
        return None

    @staticmethod
    def _validate_payload(store: Store, token: str, data: bytes) -> None:
        ref = store.hook_type(token)
        cls = None if ref is None else values.resolve_ref(ref)
        if cls is None:
            return  # untyped, or its type not imported here: the workflow decodes it
        try:
            values.validate(cls, serde.loads(data))
        except DecodeError as exc:
            raise DecodeError(f"hook {token!r}: payload refused: {exc}") from None

    @staticmethod
    def _ended(store: Store, token: str, exc: GuardError) -> str:
        text = str(exc)  # "run <id> is <status>"
        parts = text.split()
        if len(parts) >= 4 and parts[0] == "run":
            raise RunEndedError(token, parts[1], parts[3]) from None
        raise WorkflowError(f"hook {token!r}: {exc}") from None

    def _keep_seconds(
        self, store: Store, keep: str | float | timedelta | bool | None
    ) -> float | None:
        if keep is None or keep is False:
            return None
        if keep is True:
            return None if self._node_peer(store) else DEFAULT_KEEP_SECONDS
        seconds = parse_duration(keep).total_seconds()
        return seconds if seconds > 0 else None

    # -- internals --

    def _state(self, run_id: str) -> RunState:
        with self._session() as store:
            state = read_state(store.conn, run_id)
        if state is None:
            raise RunNotFoundError(f"no run {run_id}", run_id=run_id)
        return state

    def _wait(self, handle: _Handle[R], timeout: float | None) -> R:
        # Its own session: LISTEN holds the connection for the whole wait.
        conn = self.connect()
        try:
            return _listen_sync(conn, handle, timeout)
        finally:
            conn.close()


class AsyncClient:
    """`Client` for asyncio code: the same methods, as coroutines. Writes and reads run on
    the synchronous client in a thread; `result()` waits on an async connection of its own
    (no thread held while waiting)."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        connect: Connect | None = None,
        allow_node_peer: bool = False,
    ) -> None:
        self._sync = Client(dsn, connect=connect, allow_node_peer=allow_node_peer)
        self._dsn = dsn

    async def close(self) -> None:
        await asyncio.to_thread(self._sync.close)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    def _handle(self, sync: SyncRunHandle[R]) -> RunHandle[R]:
        handle = RunHandle(sync.id, sync.workflow, sync.status, client=self)
        for name in ("error", "error_code", "name", "created_at", "completed_at"):
            setattr(handle, name, getattr(sync, name))
        handle.cancel_reason = sync.cancel_reason
        handle.output, handle._raw_output = sync.output, sync._raw_output
        handle._decode_error = sync._decode_error
        return handle

    @overload
    async def enqueue(
        self, workflow: WorkflowDef[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> RunHandle[R]: ...

    @overload
    async def enqueue(self, workflow: str, /, *args: Any, **kwargs: Any) -> RunHandle[Any]: ...

    async def enqueue(
        self, workflow: WorkflowDef[Any, Any] | str, /, *args: Any, **kwargs: Any
    ) -> RunHandle[Any]:
        """See `Client.enqueue`."""
        sync = await asyncio.to_thread(lambda: self._sync.enqueue(workflow, *args, **kwargs))
        return self._handle(sync)

    @overload
    async def get(self, run_id: str) -> RunHandle[Any]: ...

    @overload
    async def get(self, run_id: str, workflow: WorkflowDef[Any, R]) -> RunHandle[R]: ...

    async def get(
        self, run_id: str, workflow: WorkflowDef[Any, Any] | None = None
    ) -> RunHandle[Any]:
        """See `Client.get`."""
        return self._handle(await asyncio.to_thread(lambda: self._sync.get(run_id, workflow)))

    async def list(
        self,
        status: str | None = None,
        workflow: WorkflowDef[Any, Any] | str | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> RunPage:
        page = await asyncio.to_thread(self._sync.list, status, workflow, limit, after)
        out = RunPage(self._handle(h) for h in page)
        out.next_cursor = page.next_cursor
        return out

    async def cancel(
        self, run_id: str, reason: str | None = None, *, graceful: bool = False
    ) -> RunHandle[Any]:
        return self._handle(
            await asyncio.to_thread(self._sync.cancel, run_id, reason, graceful=graceful)
        )

    async def resume_hook(
        self,
        token: str,
        payload: Any = None,
        *,
        keep: str | float | timedelta | bool | None = True,
    ) -> str | None:
        """See `Client.resume_hook`."""
        return await asyncio.to_thread(self._sync.resume_hook, token, payload, keep=keep)

    async def _state(self, run_id: str) -> RunState:
        return await asyncio.to_thread(self._sync._state, run_id)

    async def _wait(self, handle: _Handle[R], timeout: float | None) -> R:
        if self._sync._connect_fn is not None:  # a custom connect: wait in a thread
            return await asyncio.to_thread(self._sync._wait, handle, timeout)
        from wfctl.connection.db import APPLICATION_NAME, session_settings

        target = self._sync._target
        assert target is not None
        conninfo = target.conninfo()
        keywords, _, _ = session_settings(target, conninfo)  # the DSN's connect_timeout wins
        conn = await psycopg.AsyncConnection.connect(
            conninfo, autocommit=True, application_name=APPLICATION_NAME, **keywords
        )
        try:
            return await _listen_async(conn, handle, timeout)
        finally:
            await conn.close()
