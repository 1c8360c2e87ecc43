"""Workflow and step definitions: the registry the executor and the worker look runs up in.

No I/O here (the engine is pure too): `api.py` adds `start()`/`RunHandle` on top, which
drive runs through the executor; the executor needs only these definitions, so it does not
import `api` (and `api` imports the executor at module level: no import cycle).

Names. A run stores its workflow's name (`workflow//py:<module>//<qualname>`) and its log
stores every step's name; a worker serves a run only if it has a workflow of that name.
The module part is the *module path*, resolved from the module's file the same way however
it was imported: the file's stem, prefixed by each enclosing directory that is a regular
package (holds `__init__.py`). So `wfctl run play/onboard.py:onboard` and `wfctl worker
play.onboard` (from the parent directory) name `onboard` alike: `py:onboard//onboard` when
`play/` has no `__init__.py` (a namespace package), `py:play.onboard//onboard` when it has.
`@wf.workflow(name=...)` / `@wf.step(name=...)` fix a name explicitly. Names as earlier
versions computed them (the import spelling: `fn.__module__`, and a file's bare stem) are
kept as aliases, so runs stored under them are still found and replayed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Generic, Protocol, cast, overload

from typing_extensions import ParamSpec, TypeVar

from wfctl.runtime import engine, serde, values
from wfctl.runtime.errors import WorkflowError
from wfctl.runtime.retries import DEFAULT_POLICY, RetryPolicy

DEFAULT_MAX_RETRIES = 3
# Defaults (PEP 696): a bare `WorkflowDef` / `StepDef` annotation means "any signature".
P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


class FatalError(Exception):
    """Raise from a step to fail it at once (no retry)."""


class RetryableError(Exception):
    """Raise from a step to retry it after `retry_after` (seconds, timedelta or datetime)."""

    def __init__(
        self, message: str = "", *, retry_after: float | timedelta | datetime | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after


SerializationError = serde.SerializationError
StepFailedError = engine.StepFailedError
HookConflictError = engine.HookConflictError


def parse_duration(value: str | float | timedelta) -> timedelta:
    """`"10m"`, `"1.5s"`, `"250ms"`, `"2h"`, `"1d"`, a number of seconds, or a timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=float(value))
    m = _DURATION.match(value)
    if not m:
        raise ValueError(f"not a duration: {value!r} (try 10s, 5m, 2h, 1d, 250ms)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def file_module(path: Path) -> tuple[Path, str]:
    """(import root, dotted module path) of a `.py` file: its stem, prefixed by each
    enclosing directory that is a regular package (holds `__init__.py`)."""
    path = path.resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def module_path(module_name: str) -> str:
    """The module path a workflow's name uses (see the module docstring): derived from the
    module's file, so a file path and a dotted name that load one file agree."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not file:
        return module_name
    return file_module(Path(file))[1] or module_name


def _names(fn: Callable[..., Any], kind: str) -> tuple[str, tuple[str, ...]]:
    """(name, aliases): the module-path name, and the names earlier versions derived from
    the import spelling (`fn.__module__`, and its last component: a file loaded by path)."""
    spelled = fn.__module__
    name = f"{kind}//py:{module_path(spelled)}//{fn.__qualname__}"
    old = {f"{kind}//py:{m}//{fn.__qualname__}" for m in (spelled, spelled.rpartition(".")[2])}
    return name, tuple(sorted(old - {name}))


class ArgumentsError(WorkflowError, TypeError):
    """Arguments that do not fit a workflow's or step's signature (raised before anything
    is written: a run is never created with arguments its workflow cannot take)."""


def bind_arguments(
    fn: Callable[..., Any], args: Iterable[Any], kwargs: dict[str, Any] | None, name: str
) -> list[Any]:
    """Bind arguments to `fn`'s signature; return them as one positional list (the log
    stores an array, as the DevKit does). Keyword arguments are placed by position; a
    keyword-only parameter cannot be recorded and is refused when given."""
    args = tuple(args)
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*args, **(kwargs or {}))
    except TypeError as exc:
        raise ArgumentsError(f"{name}{parameters(fn)}: {exc}") from None
    if bound.kwargs:
        given = ", ".join(sorted(bound.kwargs))
        raise ArgumentsError(
            f"{name}{parameters(fn)}: keyword-only parameter(s) {given} cannot be recorded"
            " (the log stores positional arguments)"
        )
    return list(bound.args)


def parameters(fn: Callable[..., Any]) -> str:
    """`(key, failures=3, *, flag=False)`: the parameter list without annotations (which
    are strings under `from __future__ import annotations`), for messages."""
    signature = inspect.signature(fn)
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=plain, return_annotation=inspect.Signature.empty))


@dataclass
class StepDef(Generic[P, R]):
    """A registered step. Called inside a workflow: a durable, awaited call (typed as an
    `Awaitable` of the function's result, async or not). Outside a workflow a call runs
    the function itself; `step.fn(...)` is the same call typed as the plain function."""

    fn: Callable[..., Any]
    name: str
    max_retries: int
    timeout: float | None = None  # seconds; an attempt that runs longer fails (and retries)
    retry: RetryPolicy = DEFAULT_POLICY  # spacing of retries (retries.py; a durable timer)
    aliases: tuple[str, ...] = ()  # names an older log may hold for this step
    _types: values.Signature | None = field(default=None, init=False, repr=False)

    @property
    def types(self) -> values.Signature:
        """The decoders of the step's annotations (computed once; values.py)."""
        sig = self._types
        if sig is None:
            sig = self._types = values.signature(self.fn)
        return sig

    @property
    def backoff(self) -> float:
        """Seconds before the first retry (before jitter; 0: at once)."""
        return self.retry.backoff

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[R]:
        if not engine.in_workflow():
            plain: Awaitable[R] = self.fn(*args, **kwargs)  # outside: the function's own value
            return plain
        positional = list(args) if not kwargs else bind_arguments(self.fn, args, kwargs, self.name)
        data = serde.dumps(positional, f"the input of step {self.name}")
        future = engine.current().call_step(self.name, data, self.max_retries, self.aliases)
        result = self.types.result  # rich types: the awaited value decoded to the annotation
        return future if result is None else values.Typed(future, result)

    def invoke(self, args: list[Any]) -> Any:
        """Run the body (executor side): returns a value or a coroutine. Arguments are
        decoded to the parameters' annotations first (rich types; nothing for plain ones)."""
        sig = self.types
        if sig.args is not None or sig.rest is not None:
            try:
                args = sig.decode_args(args)
            except values.DecodeError as exc:
                raise FatalError(f"step {self.name}: {exc}") from None
        return self.fn(*args)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


@dataclass(frozen=True)
class RunOptions:
    """How a run is started, apart from its arguments (`workflow.options(...)`)."""

    idempotency_key: str | None = None
    queue: str | None = None
    run_id: str | None = None
    # W3C trace context to store with the run when no OpenTelemetry span is current
    # (tracing.enqueue): e.g. the incoming request's `traceparent`/`tracestate` headers.
    traceparent: str | None = None
    tracestate: str | None = None


NO_OPTIONS = RunOptions()
OPTION_NAMES = ("idempotency_key", "queue", "run_id", "traceparent", "tracestate")


@dataclass
class WorkflowDef(Generic[P, R]):
    """A registered workflow: calling it calls the function (a coroutine); `Client.enqueue`,
    `start` and `start_child` take it with the function's own arguments, type-checked."""

    fn: Callable[..., Coroutine[Any, Any, Any]]
    name: str
    registry: Workflows
    aliases: tuple[str, ...] = ()  # names runs stored by earlier versions may carry
    schedule: Any = None  # a schedule.Schedule: runs started once per cron tick by workers
    _types: values.Signature | None = field(default=None, init=False, repr=False)
    run_options: RunOptions = field(default=NO_OPTIONS, repr=False)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:
        return self.fn(*args, **kwargs)

    def options(
        self,
        *,
        idempotency_key: str | None = None,
        queue: str | None = None,
        run_id: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> WorkflowDef[P, R]:
        """This workflow with start options, for `Client.enqueue`, `start` and
        `start_child`: `client.enqueue(checkout.options(idempotency_key=k), order)`. The
        workflow's own keyword arguments stay its own (a parameter may be called `queue`).
        `traceparent`/`tracestate`: the W3C trace context the run continues when no
        OpenTelemetry span is current (docs/deploy.md, Tracing)."""
        bound = copy.copy(self)
        bound.run_options = RunOptions(
            idempotency_key, queue, run_id, traceparent=traceparent, tracestate=tracestate
        )
        return bound

    def split_options(self, kwargs: dict[str, Any]) -> tuple[RunOptions, dict[str, Any]]:
        """The start options of a call and the workflow's own keyword arguments. Options
        come from `options()`; `idempotency_key=`, `queue=`, `run_id=`, `traceparent=` and
        `tracestate=` given as keywords are taken as options too (the form earlier versions
        took) unless the workflow has a parameter of that name."""
        legacy = {k: kwargs[k] for k in OPTION_NAMES if k in kwargs and not self._takes(k)}
        if not legacy:
            return self.run_options, kwargs
        rest = {k: v for k, v in kwargs.items() if k not in legacy}
        return dataclasses.replace(self.run_options, **legacy), rest

    def _takes(self, name: str) -> bool:
        return name in inspect.signature(self.fn).parameters

    @property
    def types(self) -> values.Signature:
        """The decoders of the workflow's annotations (computed once; values.py)."""
        sig = self._types
        if sig is None:
            sig = self._types = values.signature(self.fn)
        return sig

    @property
    def entry(self) -> Callable[..., Coroutine[Any, Any, Any]]:
        """What the engine runs: the function itself, or (when an annotation asks for a rich
        type) a wrapper decoding the stored arguments first, inside the workflow, so a value
        that does not fit fails the run like any error of the workflow's code."""
        sig = self.types
        if sig.args is None and sig.rest is None:
            return self.fn
        fn = self.fn

        async def typed(*args: Any) -> Any:
            return await fn(*sig.decode_args(list(args)))

        return typed

    def decode_output(self, value: Any) -> R:
        """A stored result decoded to the workflow's return annotation: the ONE decoding
        path of every result (handles of `Client`, `AsyncClient` and `start()`, a child's
        `await`, `wfctl.testing`). `DecodeError` when it does not fit."""
        result = self.types.result
        decoded: R = value if result is None else result(value)
        return decoded

    @property
    def signature(self) -> str:
        """`name(params)`, for messages about arguments."""
        return f"{self.fn.__name__}{parameters(self.fn)}"

    def bind(self, args: Iterable[Any], kwargs: dict[str, Any] | None = None) -> list[Any]:
        """The run's positional input, or `ArgumentsError` naming the parameters."""
        return bind_arguments(self.fn, args, kwargs, self.fn.__name__)

    def encode_input(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> bytes:
        return serde.dumps(self.bind(args, kwargs), f"the input of workflow {self.name}")


class _WorkflowDecorator(Protocol):
    """What `@wf.workflow(...)` returns: keeps the decorated function's signature."""

    def __call__(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> WorkflowDef[P, R]: ...


class _StepDecorator(Protocol):
    """What `@wf.step(...)` returns: keeps the decorated function's signature; an async
    step's result is what its coroutine returns."""

    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> StepDef[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> StepDef[P, R]: ...


class Workflows:
    """A registry of workflows and steps; `wfctl run module:attr` finds workflows here."""

    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn
        self.workflows: dict[str, WorkflowDef] = {}
        self.steps: dict[str, StepDef] = {}
        self._aliases: dict[str, WorkflowDef | None] = {}  # None: ambiguous, not served
        self._step_aliases: dict[str, StepDef | None] = {}

    @overload
    def workflow(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> WorkflowDef[P, R]: ...

    @overload
    def workflow(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        schedule: str | None = None,
        catchup: str | float | timedelta | None = None,
    ) -> _WorkflowDecorator: ...

    def workflow(
        self,
        fn: Callable[..., Coroutine[Any, Any, Any]] | None = None,
        /,
        *,
        name: str | None = None,
        schedule: str | None = None,
        catchup: str | float | timedelta | None = None,
    ) -> WorkflowDef[Any, Any] | _WorkflowDecorator:
        """Register a workflow. `schedule` (a cron expression, UTC): `wfctl worker`s start
        one run per tick (docs/runtime.md, Schedules); `catchup` bounds how far back missed
        ticks are started after every worker was down (default 1h)."""
        plan = None
        if schedule is not None:
            from wfctl.runtime.schedule import Schedule  # croniter only for scheduled ones

            plan = Schedule.parse(schedule, None if catchup is None else parse_duration(catchup))
        elif catchup is not None:
            raise TypeError("catchup= needs schedule=")

        def register(f: Callable[..., Coroutine[Any, Any, Any]]) -> WorkflowDef[Any, Any]:
            if not inspect.iscoroutinefunction(f):
                raise TypeError(f"@workflow needs an `async def` function, got {f!r}")
            derived, aliases = _names(f, "workflow")
            wdef: WorkflowDef[Any, Any] = WorkflowDef(
                f, name or derived, self, () if name else aliases, plan
            )
            if plan is not None:
                plan.check_signature(f)
            functools.update_wrapper(wdef, f)
            self.workflows[wdef.name] = wdef
            _add_aliases(self._aliases, wdef.aliases, wdef)
            return wdef

        return register(fn) if fn is not None else cast(_WorkflowDecorator, register)

    @overload
    def step(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> StepDef[P, R]: ...

    @overload
    def step(self, fn: Callable[P, R], /) -> StepDef[P, R]: ...

    @overload
    def step(
        self,
        fn: None = None,
        /,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        name: str | None = None,
        timeout: str | float | timedelta | None = None,
        backoff: str | float | timedelta | None = None,
        max_backoff: str | float | timedelta | None = None,
        jitter: float | None = None,
    ) -> _StepDecorator: ...

    def step(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        name: str | None = None,
        timeout: str | float | timedelta | None = None,
        backoff: str | float | timedelta | None = None,
        max_backoff: str | float | timedelta | None = None,
        jitter: float | None = None,
    ) -> StepDef[Any, Any] | _StepDecorator:
        """Register a step. Retries (up to `max_retries`) wait `backoff` (default 1s) doubled
        per attempt, capped at `max_backoff` (default 60s), less up to `jitter` (default 0.5)
        of it at random; `backoff=0` retries at once (wfctl/runtime/retries.py)."""
        limit = None if timeout is None else parse_duration(timeout).total_seconds()
        policy = _policy(backoff, max_backoff, jitter)

        def register(f: Callable[..., Any]) -> StepDef[Any, Any]:
            derived, aliases = _names(f, "step")
            sdef: StepDef[Any, Any] = StepDef(
                f, name or derived, max(0, max_retries), limit, policy, () if name else aliases
            )
            functools.update_wrapper(sdef, f)
            self.steps[sdef.name] = sdef
            _add_aliases(self._step_aliases, sdef.aliases, sdef)
            return sdef

        return register(fn) if fn is not None else cast(_StepDecorator, register)

    def find(self, attr: str) -> WorkflowDef:
        """A workflow by function name, qualified name or full workflow name."""
        for wdef in self.workflows.values():
            if attr in (wdef.name, wdef.fn.__name__, wdef.fn.__qualname__):
                return wdef
        known = ", ".join(sorted(w.fn.__name__ for w in self.workflows.values())) or "none"
        raise LookupError(f"no workflow {attr!r} in this registry (known: {known})")

    def by_name(self, name: str) -> WorkflowDef | None:
        """The workflow a stored run names (its name, or an unambiguous older alias)."""
        return self.workflows.get(name) or self._aliases.get(name)

    def step_by_name(self, name: str) -> StepDef | None:
        """The step a log names (its name, or an unambiguous older alias)."""
        return self.steps.get(name) or self._step_aliases.get(name) or _builtin_step(name)

    def served_names(self) -> list[str]:
        """Every workflow name a worker of this registry can drive (names and aliases)."""
        names = set(self.workflows)
        names.update(alias for alias, wdef in self._aliases.items() if wdef is not None)
        return sorted(names)


def _policy(
    backoff: str | float | timedelta | None,
    max_backoff: str | float | timedelta | None,
    jitter: float | None,
) -> RetryPolicy:
    """The step's retry policy: the defaults, with what the decorator overrides."""
    if backoff is None and max_backoff is None and jitter is None:
        return DEFAULT_POLICY
    return RetryPolicy(
        DEFAULT_POLICY.backoff if backoff is None else parse_duration(backoff).total_seconds(),
        DEFAULT_POLICY.max_backoff
        if max_backoff is None
        else parse_duration(max_backoff).total_seconds(),
        DEFAULT_POLICY.jitter if jitter is None else float(jitter),
    )


def _builtin_step(name: str) -> StepDef | None:
    """wfctl's own steps: the marker `patched()` records (patching.py)."""
    from wfctl.runtime import patching

    if not patching.is_marker(name):
        return None
    return StepDef(patching.marker_body, name, 3)


def _add_aliases(table: dict[str, Any], aliases: tuple[str, ...], target: Any) -> None:
    """Register aliases; an alias two definitions share is served by neither (a run named
    by it is left to a worker that knows which one it means)."""
    for alias in aliases:
        table[alias] = None if alias in table and table[alias] is not target else target
