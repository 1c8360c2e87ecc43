"""A lean pipeline for the runtime's transactions: libpq's pipeline mode, driven directly.

The runtime's per-step transactions are a handful of small statements (guard, row change,
event batch, BEGIN/COMMIT). Sent through psycopg's cursors and `Connection.pipeline()`, the
client CPU spent per statement (query conversion, parameter adaptation, cursor and result
bookkeeping, one wait per statement) was larger than the server's work and the round trip
together: about 0.6 ms of the ~0.9 ms per step. Here the same statements go through the
connection's `pgconn` (libpq): each SQL file is prepared once per connection under a fixed
name, parameters are encoded by a few lines of code (text, or binary for `bytea`), and the
whole batch is sent and read in one exchange ending in one Sync (one round trip).

Semantics are those of the psycopg path: statements run in order; the first error aborts the
rest of the batch (libpq reports `PIPELINE_ABORTED` for them) and is raised as the psycopg
exception psycopg itself would raise (`psycopg.errors.error_from_result`), so callers map
errors exactly as before. Transactions are explicit (`BEGIN`/`COMMIT` statements of the batch).
"""

from __future__ import annotations

import contextlib
import functools
import re
import weakref
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg import pq
from psycopg.waiting import Ready, Wait

from wfctl import sql

_PREPARED: weakref.WeakKeyDictionary[psycopg.Connection[Any], set[bytes]] = (
    weakref.WeakKeyDictionary()
)
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_BYTEA_OID = 17
_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_COMMAND_OK = pq.ExecStatus.COMMAND_OK
_PIPELINE_SYNC = pq.ExecStatus.PIPELINE_SYNC
_FATAL = pq.ExecStatus.FATAL_ERROR
_ABORTED = pq.ExecStatus.PIPELINE_ABORTED


@dataclass(frozen=True)
class Prepared:
    """One SQL file in libpq form: `$n` placeholders (one per occurrence, as psycopg sends
    them) and the parameter name behind each."""

    name: bytes
    text: bytes
    params: tuple[str, ...]


@functools.cache
def prepared(sql_name: str) -> Prepared:
    """`sql/<sql_name>.sql` with `%(name)s` placeholders turned into `$1, $2, ...`."""
    text = sql.load(sql_name)
    if "%%" in text:
        raise ValueError(f"{sql_name}: literal % is not supported by the runtime's pipeline")
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        names.append(m.group(1))
        return f"${len(names)}"

    converted = _PLACEHOLDER.sub(number, text)
    label = "wfctl_" + re.sub(r"\W", "_", sql_name)
    return Prepared(label.encode(), converted.encode(), tuple(names))


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_ITEMS: dict[type, Any] = {
    type(None): lambda _v: "NULL",
    bool: lambda v: "t" if v else "f",
    int: str,
    str: _quote,
    bytes: lambda v: '"\\\\x' + v.hex() + '"',
}


def _array_item(value: Any) -> str:
    item = _ITEMS.get(type(value))
    if item is None:
        raise TypeError(f"cannot send {type(value).__name__} in an array parameter")
    text: str = item(value)
    return text


def _array_text(value: list[Any] | tuple[Any, ...]) -> str:
    """An array parameter's text. The runtime's arrays (an events INSERT's ids, types,
    correlation ids, payloads and spec versions) are of one plain type each: they take one
    `join`, and only a mixed or escaped array goes item by item."""
    if not value:
        return "{}"
    first = type(value[0])
    if first is str:
        try:
            joined = "".join(value)
        except TypeError:  # None (or another type) among the strings
            joined = '"'
        if '"' not in joined and "\\" not in joined:
            return '{"' + '","'.join(value) + '"}'
    elif first is bytes:
        try:
            return '{"\\\\x' + '","\\\\x'.join([v.hex() for v in value]) + '"}'
        except AttributeError:  # None among the payloads
            pass
    elif first is int and all(type(v) is int for v in value):
        return "{" + ",".join(map(str, value)) + "}"
    return "{" + ",".join([_array_item(v) for v in value]) + "}"


def _array(value: list[Any] | tuple[Any, ...]) -> tuple[bytes | None, int, int]:
    return _array_text(value).encode(), 0, 0


def _datetime(value: datetime) -> tuple[bytes | None, int, int]:
    if value.tzinfo is not None:
        # psycopg would send an aware value as timestamptz (converted by the session's
        # TimeZone); the runtime only writes naive UTC wall times (`_utc_naive`).
        raise TypeError("the runtime's pipeline sends naive (UTC wall time) datetimes only")
    return value.isoformat().encode(), 0, 0


_ENCODERS: dict[type, Any] = {
    type(None): lambda _v: (None, 0, 0),
    bytes: lambda v: (v, 1, _BYTEA_OID),
    str: lambda v: (v.encode(), 0, 0),
    bool: lambda v: ((b"t" if v else b"f"), 0, 0),
    int: lambda v: (str(v).encode(), 0, 0),
    float: lambda v: (repr(v).encode(), 0, 0),
    datetime: _datetime,
    list: _array,
    tuple: _array,
}


def encode(value: Any) -> tuple[bytes | None, int, int]:
    """(wire value, format, type oid) of one parameter; oid 0 lets the server infer it."""
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        raise TypeError(f"cannot send {type(value).__name__} as a parameter")
    out: tuple[bytes | None, int, int] = encoder(value)
    return out


def _encode_all(
    names: tuple[str, ...], params: dict[str, Any]
) -> tuple[list[bytes | None], list[int]]:
    """The wire values and formats of a statement's parameters: `encode` with the common
    types inline (one step sends ~18 parameters; this is on its path)."""
    values: list[bytes | None] = []
    formats: list[int] = []
    add_value, add_format = values.append, formats.append
    for key in names:
        v = params[key]
        t = type(v)
        if t is str:
            add_value(v.encode())
            add_format(0)
        elif t is bytes:
            add_value(v)
            add_format(1)
        elif v is None:
            add_value(None)
            add_format(0)
        elif t is list:
            add_value(_array_text(v).encode())
            add_format(0)
        else:
            wire, fmt, _ = encode(v)
            add_value(wire)
            add_format(fmt)
    return values, formats


@dataclass
class Result:
    """Rows of one statement, as text (None for NULL)."""

    rows: list[tuple[str | None, ...]]


class Pipeline:
    """Sends batches of statements on one psycopg connection (autocommit, not in a psycopg
    pipeline) through its libpq connection. Remembers what it prepared on that connection."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        # psycopg must not prepare statements of its own on this session: after a ROLLBACK
        # it clears its cache with `DEALLOCATE ALL`, which drops ours too (seen as a worker
        # slot failing on a missing `wfctl_runtime_guard_run` and its run waiting out the
        # lease: a 19 s stall in bench_worker's 2-worker, 16-run case).
        conn.prepare_threshold = None
        # Prepared statements belong to the session: shared by every Pipeline (every Store)
        # on this connection.
        prepared_on = _PREPARED.get(conn)
        if prepared_on is None:
            prepared_on = _PREPARED[conn] = set()
        self._prepared = prepared_on

    def run(self, batch: Sequence[tuple[str | bytes, dict[str, Any] | None]]) -> list[Result]:
        """Send the batch in one exchange; return one Result per statement, in order.

        An item is (SQL file name, params) for a prepared statement, or (raw bytes, None) for
        a parameterless statement such as BEGIN/COMMIT. Raises the first statement error.
        """
        conn = self.conn
        pg = conn.pgconn
        plan: list[bytes | None] = []  # per result: the name it prepares, or None
        sent: set[bytes] = set()  # prepared in this batch (a statement may occur twice)
        with conn.lock:
            pg.enter_pipeline_mode()
            try:
                for item, params in batch:
                    if isinstance(item, bytes):
                        pg.send_query_params(item, None)
                        plan.append(None)
                        continue
                    p = prepared(item)
                    assert params is not None
                    if p.name not in self._prepared and p.name not in sent:
                        oids = [encode(params[key])[2] for key in p.params]
                        pg.send_prepare(p.name, p.text, oids)
                        sent.add(p.name)
                        plan.append(p.name)
                    values, formats = _encode_all(p.params, params)
                    pg.send_query_prepared(p.name, values, formats)
                    plan.append(None)
                pg.pipeline_sync()
                raw = conn.wait(_exchange(pg))
            except BaseException:
                _discard(conn)
                raise
            pg.exit_pipeline_mode()
        results: list[Result] = []
        error: BaseException | None = None
        for name, res in zip(plan, raw, strict=True):
            status = res.status
            if status == _FATAL:
                if error is None:
                    error = pgerrors.error_from_result(res, encoding=conn.info.encoding)
                continue
            if status == _ABORTED:
                continue
            if name is not None:
                if status == _COMMAND_OK:
                    self._prepared.add(name)
                continue
            if status == _TUPLES_OK:
                results.append(Result(_rows(res)))
            else:
                results.append(Result([]))
        if error is not None:
            if isinstance(error, pgerrors.InvalidSqlStatementName):
                # Our statements were dropped behind our back (DEALLOCATE ALL / DISCARD ALL
                # on this session): prepare them again from the next batch on.
                self._prepared.clear()
            raise error
        return results


def _rows(res: pq.abc.PGresult) -> list[tuple[str | None, ...]]:
    out: list[tuple[str | None, ...]] = []
    ncols = res.nfields
    for r in range(res.ntuples):
        row: list[str | None] = []
        for c in range(ncols):
            v = res.get_value(r, c)
            row.append(None if v is None else bytes(v).decode())
        out.append(tuple(row))
    return out


def _exchange(pg: pq.abc.PGconn) -> Generator[Wait, Ready | int, list[pq.abc.PGresult]]:
    """Flush the queued batch, then read one result per statement up to the Sync."""
    while pg.flush():
        ready = yield Wait.RW
        if ready & Ready.R:
            pg.consume_input()
            _notifies(pg)
    results: list[pq.abc.PGresult] = []
    while True:
        while not pg.is_busy():
            r = pg.get_result()
            if r is None:
                continue
            if r.status == _PIPELINE_SYNC:
                return results
            results.append(r)
        yield Wait.R
        pg.consume_input()
        _notifies(pg)


def _notifies(pg: pq.abc.PGconn) -> None:
    # As psycopg does whenever it reads: hand notifications to the connection's handler.
    while n := pg.notifies():
        if pg.notify_handler:
            pg.notify_handler(n)


def _discard(conn: psycopg.Connection[Any]) -> None:
    """An exchange interrupted half-way (e.g. KeyboardInterrupt) leaves libpq mid-pipeline
    with results unread: the connection cannot be trusted any more; close it."""
    with contextlib.suppress(Exception):  # best effort on a broken connection
        conn.close()


__all__ = ["Pipeline", "Prepared", "Result", "encode", "prepared"]
