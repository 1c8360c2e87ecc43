"""Rich values across the durable boundary: dataclasses, pydantic models, `Decimal`, `UUID`,
`date`, `time`, `bytes`, `set`/`frozenset`, `Enum`, and types with a registered codec.

Two halves, both kept off the path of plain values:

- **Encoding** (`reduce`): serde's `stringify` writes JSON-like values itself and calls
  `reduce` only for a value it does not know. A rich value becomes something the DevKit's own
  reader revives (its devalue revivers, `@workflow/core` `getCommonRevivers`): `bytes` the
  DevKit's `["Uint8Array", base64]` and sets its `["Set", [...]]` (a `Uint8Array` and a `Set` in
  Node); every other rich type a plain value Node reads as is: a dataclass or pydantic model
  its fields as an object, an `Enum` its value, `Decimal`/`UUID`/`date`/`time` their ISO/str
  text. So a Python run's payloads stay readable by the Node package and its tools.
- **Decoding** (`decoder`): what comes back is plain data; the annotation of the workflow's or
  step's signature says what to rebuild (`date` from its text, a dataclass from its object,
  `set[int]` from the list...). The decoders of a definition are computed once (cached on the
  definition) and are `None` where an annotation needs nothing (str, int, list[str], Any, no
  annotation): plain signatures cost nothing. Without an annotation a value comes back as its
  plain form (a `Decimal` as its string), as with JSON-based SDKs.

`register_codec(cls, encode, decode)` adds a type: `encode(obj)` returns any value that crosses
the boundary, `decode(plain)` rebuilds the object where an annotation names `cls` (or a subclass).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import inspect
import sys
import types
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from wfctl.runtime import errors as _errors

Decoder = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Codec:
    cls: type
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


_CODECS: dict[type, Codec] = {}


def register_codec(cls: type, encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> None:
    """Let values of `cls` (and its subclasses) cross the durable boundary.

    `encode(obj)` returns a value serde can write (JSON-like data, or other rich types);
    `decode(plain)` rebuilds the object from what `encode` returned (after a round trip:
    tuples come back as lists, and so on). Decoding happens where a workflow or step
    annotation names `cls`. A codec registered for a type wfctl already knows replaces
    wfctl's handling of it (for encoding as for decoding)."""
    if not isinstance(cls, type):
        raise TypeError(f"register_codec needs a class, got {cls!r}")
    _CODECS[cls] = Codec(cls, encode, decode)
    _decoder_cache.clear()
    _codec_for.cache_clear()


@functools.lru_cache(maxsize=256)
def _codec_for(cls: type) -> Codec | None:
    for base in cls.__mro__:
        codec = _CODECS.get(base)
        if codec is not None:
            return codec
    return None


# --- encoding -------------------------------------------------------------------------------


class NotRich(TypeError):
    """`reduce` has no encoding for the value."""


def reduce(value: Any) -> tuple[str | None, Any]:
    """(devalue tag or None, replacement) for a value serde does not write itself.

    With a tag the value is written as the DevKit's reducer entry `[tag, index]` (the
    replacement at `index`); without one the replacement is written in its place.
    Raises `NotRich` for a value nothing here encodes."""
    cls = type(value)
    if _CODECS:
        codec = _codec_for(cls)  # type: ignore[arg-type]  # classes are hashable
        if codec is not None:
            return None, codec.encode(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return "Uint8Array", base64.b64encode(raw).decode("ascii") if raw else "."
    if isinstance(value, set | frozenset):
        return "Set", _ordered(value)
    if isinstance(value, enum.Enum):
        return None, value.value
    if isinstance(value, Decimal | uuid.UUID):
        return None, str(value)
    if isinstance(value, date) and not isinstance(value, datetime):
        return None, value.isoformat()
    if isinstance(value, time):
        return None, value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return None, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    model = _pydantic_model()
    if model is not None and isinstance(value, model):
        dumped: dict[str, Any] = value.model_dump(  # type: ignore[attr-defined]
            mode="python", by_alias=True
        )
        return None, dumped
    raise NotRich(cls.__qualname__)


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    """A set's members in a stable order (sorted when they sort: str hashing is salted per
    process, and a payload must not depend on the process that wrote it)."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


def _pydantic_model() -> type | None:
    """pydantic's BaseModel if the application imported pydantic (never imported here)."""
    module = sys.modules.get("pydantic")
    model = getattr(module, "BaseModel", None) if module is not None else None
    return model if isinstance(model, type) else None


# --- decoding -------------------------------------------------------------------------------


DecodeError = _errors.DecodeError  # a WorkflowError (errors.py): documented, catchable


_decoder_cache: dict[Any, Decoder | None] = {}
_NONE_TYPE = type(None)
_PASS_TYPES: tuple[type, ...] = (str, int, float, bool, _NONE_TYPE, object, datetime)


def decoder(annotation: Any) -> Decoder | None:
    """A function turning a decoded plain value into `annotation`'s type, or None when the
    plain value already is one (no work at all for plain annotations)."""
    try:
        return _decoder_cache[annotation]
    except KeyError:
        pass
    except TypeError:  # an unhashable annotation: build it, do not cache
        return _build(annotation)
    _decoder_cache[annotation] = None  # a recursive dataclass refers to itself: plain meanwhile
    built = _build(annotation)
    _decoder_cache[annotation] = built
    return built


def _build(ann: Any) -> Decoder | None:
    if ann is Any or ann is inspect.Parameter.empty or isinstance(ann, str | typing.TypeVar):
        return None
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return decoder(typing.get_args(ann)[0])
    if origin is typing.Literal or origin is typing.ClassVar:
        return None
    if origin is typing.Union or origin is types.UnionType:
        return _union(typing.get_args(ann))
    if origin is not None:
        return _generic(origin, typing.get_args(ann))
    if isinstance(ann, typing.NewType):
        return decoder(ann.__supertype__)
    if not isinstance(ann, type):
        return None
    codec = _codec_for(ann)
    if codec is not None:
        return _checked(ann, codec.decode)
    if ann in _PASS_TYPES:
        return None
    if issubclass(ann, enum.Enum):
        return _checked(ann, ann)
    if issubclass(ann, bool | int | float | str) and not issubclass(ann, enum.Enum):
        return None
    if ann is Decimal:
        return _checked(Decimal, lambda v: Decimal(str(v)))
    if ann is uuid.UUID:
        return _checked(uuid.UUID, lambda v: uuid.UUID(str(v)))
    if ann is date:
        return _checked(date, lambda v: date.fromisoformat(str(v)))
    if ann is time:
        return _checked(time, lambda v: time.fromisoformat(str(v)))
    if ann is timedelta:
        return None
    if ann in (bytes, bytearray):
        return _checked(ann, lambda v: ann(_bytes(v)))
    if ann in (set, frozenset):
        return lambda v: v if isinstance(v, ann) else ann(v)
    if ann is tuple:
        return lambda v: v if isinstance(v, tuple) else tuple(v)
    if dataclasses.is_dataclass(ann):
        return _dataclass(ann)
    model = _pydantic_model()
    if model is not None and issubclass(ann, model):
        validate: Callable[[Any], Any] = ann.model_validate  # type: ignore[attr-defined]
        return _checked(ann, validate)
    return None


def _checked(cls: type, make: Callable[[Any], Any]) -> Decoder:
    def decode(value: Any) -> Any:
        if value is None or isinstance(value, cls):
            return value
        try:
            return make(value)
        except Exception as exc:
            raise DecodeError(
                f"cannot decode {_show(value)} as {cls.__qualname__}: {exc}"
            ) from None

    return decode


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):  # an untagged base64 text (a hand-written payload)
        return base64.b64decode(value)
    return bytes(value)


def _union(args: tuple[Any, ...]) -> Decoder | None:
    members = [a for a in args if a is not _NONE_TYPE]
    decoders = [decoder(a) for a in members]
    if all(d is None for d in decoders):
        return None
    if len(members) == 1:
        single = decoders[0]
        assert single is not None
        return lambda v: None if v is None else single(v)
    pairs = list(zip(members, decoders, strict=True))

    def decode(value: Any) -> Any:
        if value is None:
            return None
        for member, dec in pairs:
            if isinstance(member, type) and isinstance(value, member):
                return value if dec is None else dec(value)
        errors = []
        for member, dec in pairs:
            if dec is None:
                continue
            try:
                return dec(value)
            except Exception as exc:  # try the next member
                errors.append(f"{getattr(member, '__qualname__', member)}: {exc}")
        if errors and len(errors) == sum(d is not None for _, d in pairs):
            raise DecodeError(f"cannot decode {_show(value)} as any of: {'; '.join(errors)}")
        return value

    return decode


def _generic(origin: Any, args: tuple[Any, ...]) -> Decoder | None:
    if origin in (list, Sequence, typing.MutableSequence) or (
        isinstance(origin, type) and origin is not tuple and issubclass(origin, list)
    ):
        item = decoder(args[0]) if args else None
        if item is None:
            return None
        return lambda v: v if v is None else [item(x) for x in v]
    if origin in (set, frozenset, typing.AbstractSet, typing.MutableSet):
        make = frozenset if origin is frozenset else set
        elem = decoder(args[0]) if args else None
        if elem is None:
            return lambda v: v if v is None else make(v)
        return lambda v: v if v is None else make(elem(x) for x in v)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = decoder(args[0])
            if each is None:
                return lambda v: v if v is None else tuple(v)
            return lambda v: v if v is None else tuple(each(x) for x in v)
        parts = [decoder(a) for a in args]
        return lambda v: (
            v
            if v is None
            else tuple(x if d is None else d(x) for x, d in zip(v, parts, strict=False))
        )
    if origin in (dict, Mapping, typing.MutableMapping):
        key = decoder(args[0]) if args else None
        val = decoder(args[1]) if len(args) > 1 else None
        if key is None and val is None:
            return None
        return lambda v: (
            v
            if v is None
            else {
                (k if key is None else key(k)): (x if val is None else val(x)) for k, x in v.items()
            }
        )
    return None


def _dataclass(cls: type) -> Decoder:
    hints = _hints(cls)
    fields = [(f.name, decoder(hints.get(f.name, Any))) for f in dataclasses.fields(cls) if f.init]
    make: Callable[..., Any] = cls

    def decode(value: Any) -> Any:
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise DecodeError(f"cannot decode {_show(value)} as {cls.__qualname__}: not an object")
        kwargs = {
            name: (value[name] if dec is None else dec(value[name]))
            for name, dec in fields
            if name in value
        }
        try:
            return make(**kwargs)
        except TypeError as exc:
            raise DecodeError(f"cannot decode as {cls.__qualname__}: {exc}") from None

    return decode


def _hints(obj: Any) -> dict[str, Any]:
    """Resolved annotations (string annotations too); unresolvable ones are left out (their
    values come back plain)."""
    try:
        return typing.get_type_hints(obj)
    except Exception:
        raw = getattr(obj, "__annotations__", {}) or {}
        module = sys.modules.get(getattr(obj, "__module__", ""), None)
        namespace = dict(vars(module)) if module is not None else {}
        hints: dict[str, Any] = {}
        for name, ann in raw.items():
            if isinstance(ann, str):
                try:
                    ann = eval(ann, namespace)  # the module's own annotation text, as typing does
                except Exception:
                    continue
            hints[name] = ann
        return hints


def type_ref(annotation: Any) -> str | None:
    """`module:qualname` of a class annotation (what a hook records of its payload type),
    None for anything else (a generic alias: the workflow still decodes its payloads)."""
    if not isinstance(annotation, type) or "<locals>" in annotation.__qualname__:
        return None
    return f"{annotation.__module__}:{annotation.__qualname__}"


def resolve_ref(ref: str) -> Any:
    """The class `type_ref` named, from a module this process has ALREADY imported (a
    reference read from the database never imports code), or None."""
    module_name, _, qualname = ref.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        return None
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if isinstance(obj, type) else None


def validate(annotation: Any, value: Any) -> Any:
    """`value` (plain, as stored) decoded to `annotation`, or `DecodeError`; a dataclass's
    plain fields are checked for their type too (a str where an int is declared), which
    decoding alone lets through. A typed hook's payloads pass here at `resume_hook` and
    again in the workflow, so both refuse the same payloads."""
    decode = decoder(annotation)
    decoded = value if decode is None else decode(value)
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        if not isinstance(value, dict):
            raise DecodeError(f"cannot decode {_show(value)} as {annotation.__qualname__}")
        hints = _hints(annotation)
        for f in dataclasses.fields(annotation):
            ann = hints.get(f.name, Any)
            got = getattr(decoded, f.name, None)
            if isinstance(ann, type) and ann in (str, int, float, bool) and got is not None:
                ok = isinstance(got, ann) and not (ann is not bool and isinstance(got, bool))
                if ann is float and isinstance(got, int) and not isinstance(got, bool):
                    ok = True
                if not ok:
                    raise DecodeError(
                        f"cannot decode as {annotation.__qualname__}: field {f.name} is"
                        f" {_show(got)}, not {ann.__name__}"
                    )
    return decoded


class Typed:
    """A step's awaitable whose value is decoded to the step's return annotation (a plain
    return annotation gets the engine's future itself: no wrapper)."""

    __slots__ = ("_decode", "_future")

    def __init__(self, future: Any, decode: Decoder) -> None:
        self._future = future
        self._decode = decode

    def __await__(self) -> typing.Generator[Any, None, Any]:
        value = yield from self._future.__await__()
        return self._decode(value)


# --- signatures -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Signature:
    """The decoders of one workflow's or step's signature (None: nothing to do)."""

    args: tuple[Decoder | None, ...] | None  # per positional parameter; None: all plain
    rest: Decoder | None  # *args
    result: Decoder | None

    def decode_args(self, args: list[Any]) -> list[Any]:
        if self.args is None and self.rest is None:
            return args
        decoders = self.args or ()
        out = []
        for i, value in enumerate(args):
            dec = decoders[i] if i < len(decoders) else self.rest
            out.append(value if dec is None else dec(value))
        return out


PLAIN = Signature(None, None, None)


def signature(fn: Callable[..., Any]) -> Signature:
    """The decoders of `fn`'s parameters and result, from its (resolved) annotations."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return PLAIN
    hints = _hints(fn)
    positional: list[Decoder | None] = []
    rest: Decoder | None = None
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional.append(decoder(hints.get(p.name, Any)))
        elif p.kind is p.VAR_POSITIONAL:
            rest = decoder(hints.get(p.name, Any))
    result = decoder(hints.get("return", Any))
    args = tuple(positional) if any(d is not None for d in positional) else None
    if args is None and rest is None and result is None:
        return PLAIN
    return Signature(args, rest, result)
