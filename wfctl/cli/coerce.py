"""Option values converted without pydantic, and the root help rendered without Markdown.

typer 0.29 converts every option value through a pydantic `TypeAdapter`: the first value
costs the pydantic import (more than the database driver's), on every command and every Tab
press. wfctl's options are all plain (str, int with bounds, float, a path, an enum, lists of
those), so `fast(param)` gives such a parameter a converter with the same results and the
same messages in plain words; any other annotation keeps typer's own. Non-finite numbers
(`nan`, `inf`) are refused: no wfctl option means them.

`import_rich_help()` imports typer's rich help module while `rich.markdown` and
`rich.traceback` (Markdown mode and pretty tracebacks, which wfctl turns off) stand in as
stubs: they load pygments and markdown-it, most of `--help`'s cost.
"""

from __future__ import annotations

import enum
import importlib
import math
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer import BadParameter

# typer's per-parameter conversion hook (private; typer is pinned to 0.29.x in pyproject, and
# tests/test_cli_startup.py fails if a command path imports pydantic again)
from typer._coercion import RuntimeParam


class PlainValueError(ValueError):
    """A value that does not convert; the message is already in an operator's words."""


def _str(value: Any, _param: Any, _ctx: Any) -> Any:
    return value if isinstance(value, str) else str(value)


def _int(value: Any, _param: Any, _ctx: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        raise PlainValueError(f"expected a whole number, got {value!r}") from None


def _float(value: Any, _param: Any, _ctx: Any) -> Any:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise PlainValueError(f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise PlainValueError(f"expected a finite number, got {value!r}")
    return number


_BOOLS = dict.fromkeys(("1", "true", "yes", "on", "t", "y"), True) | dict.fromkeys(
    ("0", "false", "no", "off", "f", "n", ""), False
)


def _bool(value: Any, _param: Any, _ctx: Any) -> Any:
    if isinstance(value, bool):
        return value
    found = _BOOLS.get(str(value).strip().lower())
    if found is None:
        raise PlainValueError(f"expected true or false, got {value!r}")
    return found


def _path(value: Any, _param: Any, _ctx: Any) -> Any:
    return value if isinstance(value, Path) else Path(value)


def _choice(choices: tuple[enum.Enum, ...], case_sensitive: bool) -> Any:
    def norm(text: str) -> str:
        return text if case_sensitive else text.casefold()

    names = {norm(str(c.value)): c for c in choices}

    def convert(value: Any, _param: Any, _ctx: Any) -> Any:
        if isinstance(value, enum.Enum) and value in choices:
            return value
        found = names.get(norm(str(value)))
        if found is None:
            listed = ", ".join(repr(str(c.value)) for c in choices)
            raise PlainValueError(f"{value!r} is not one of {listed}")
        return found

    return convert


def _bounded(convert: Any, low: float | None, high: float | None) -> Any:
    def check(value: Any, param: Any, ctx: Any) -> Any:
        number = convert(value, param, ctx)
        if low is not None and number < low:
            raise PlainValueError(f"must be at least {low}, got {value!r}")
        if high is not None and number > high:
            raise PlainValueError(f"must be at most {high}, got {value!r}")
        return number

    return check


def _leaf(annotation: Any, info: Any) -> Any:
    """The converter for one plain annotation, or None (typer keeps its own)."""
    if info.parser is not None or info.clamp:
        return None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _choice(tuple(annotation), bool(info.case_sensitive))
    if annotation is str:
        return _str
    if annotation is bool:
        return _bool
    if annotation is Path and not _path_checks(info):
        return _path
    number = {int: _int, float: _float}.get(annotation)
    if number is None:
        return None
    if info.min is not None or info.max is not None:
        return _bounded(number, info.min, info.max)
    return number


def _path_checks(info: Any) -> bool:
    """Whether typer's path options ask for checks (exists, readable, ...)."""
    return bool(
        info.exists
        or info.resolve_path
        or info.allow_dash
        or not info.file_okay
        or not info.dir_okay
        or info.writable
        or info.readable is False
        or info.path_type is not None
    )


@dataclass(frozen=True)
class _Fast(RuntimeParam):
    convert: Any
    listed: bool

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            if self.listed:
                items = value if isinstance(value, list | tuple) else [value]
                return [self.convert(v, param, ctx) for v in items]
            return self.convert(value, param, ctx)
        except PlainValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from exc


def fast(param: Any) -> None:
    """Give `param` a pydantic-free converter when its annotation is plain."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or descriptor.file_annotation is not None:
        return
    if getattr(param, "_runtime_param", "missing") is not None:
        return  # already converting, or a typer without this hook: leave it alone
    annotation, listed = descriptor.annotation, False
    if get_origin(annotation) is list and len(get_args(annotation)) == 1:
        annotation, listed = get_args(annotation)[0], True
    convert = _leaf(annotation, descriptor.parameter_info)
    if convert is not None:
        param._runtime_param = _Fast(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            convert=convert,
            listed=listed,
        )


_UNUSED_BY_HELP = {"rich.markdown": ("Markdown",), "rich.traceback": ("Traceback",)}


def import_rich_help() -> None:
    """Import `typer.rich_utils` without the rich modules only Markdown mode needs."""
    if "typer.rich_utils" in sys.modules:
        return
    stubbed = []
    for name, attrs in _UNUSED_BY_HELP.items():
        if name in sys.modules:
            continue
        stub = types.ModuleType(name)
        stub.__wfctl_stub__ = True  # type: ignore[attr-defined]
        for attr in attrs:
            setattr(stub, attr, _deferred(name, attr))
        sys.modules[name] = stub
        stubbed.append(name)
    try:
        importlib.import_module("typer.rich_utils")
    except ImportError:  # a typer that imports more from them: import them for real
        for name in stubbed:
            sys.modules.pop(name, None)
        sys.modules.pop("typer.rich_utils", None)
        importlib.import_module("typer.rich_utils")
    finally:
        for name in stubbed:
            if isinstance(sys.modules.get(name), types.ModuleType) and getattr(
                sys.modules[name], "__wfctl_stub__", False
            ):
                del sys.modules[name]


def _deferred(module: str, attr: str) -> type:
    """A class standing in for `module.attr`: instances and class attributes load the real one."""

    class Meta(type):
        def __getattr__(cls, name: str) -> Any:
            return getattr(_real(module, attr), name)

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        return _real(module, attr)(*args, **kwargs)

    return Meta(attr, (), {"__new__": new})


def _real(module: str, attr: str) -> Any:
    if getattr(sys.modules.get(module), "__wfctl_stub__", False):
        del sys.modules[module]
    return getattr(importlib.import_module(module), attr)
