"""Workflows the worker tests run in real worker processes (`wfctl worker tests.worker.flows`).

Every step body records its side effect in `public.effects` (run key, step, attempt seen) on
its own connection (`WFCTL_EFFECTS_DSN`), outside the runtime's transactions, so the tests
can count how often each body really ran, across processes and SIGKILLs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any

import psycopg

from wfctl.runtime import RetryableError, Workflows, create_hook, sleep

wf = Workflows()
_local = threading.local()

EFFECTS_DDL = """
CREATE TABLE IF NOT EXISTS public.effects (
    id bigserial PRIMARY KEY, key text NOT NULL, step text NOT NULL, pid int NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)"""


def _conn() -> psycopg.Connection[Any]:
    conn: psycopg.Connection[Any] | None = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = psycopg.connect(os.environ["WFCTL_EFFECTS_DSN"], autocommit=True)
        _local.conn = conn
    return conn


def effect(key: str, step: str) -> int:
    """Record one execution of a step body; returns how many times it has run so far."""
    row = (
        _conn()
        .execute(
            "WITH i AS (INSERT INTO public.effects (key, step, pid) VALUES (%s, %s, %s))"
            " SELECT count(*) + 1 FROM public.effects WHERE key = %s AND step = %s",
            (key, step, os.getpid(), key, step),
        )
        .fetchone()
    )
    return int(row[0]) if row else 1


@wf.step
def work(key: str, i: int) -> int:
    effect(key, f"work-{i}")
    time.sleep(0.01)
    return i


@wf.step(max_retries=3)
def flaky(key: str, failures: int) -> str:
    n = effect(key, "flaky")
    if n <= failures:
        raise RetryableError(f"attempt {n} failed", retry_after=0.1)
    return f"ok after {n}"


@wf.step(max_retries=3, backoff=0.05)
def bouncy(key: str) -> int:
    n = effect(key, "bouncy")
    if n == 1:
        raise ValueError("first attempt fails; retried after the backoff")
    return n


@wf.step
async def fan(key: str, i: int) -> int:
    await asyncio.to_thread(effect, key, f"fan-{i}")
    await asyncio.sleep(0.02)
    return i * i


@wf.step(max_retries=1)
def suicide(key: str) -> str:
    effect(key, "suicide")
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@wf.step(max_retries=2, timeout=0.3)
def slowpoke(key: str) -> str:
    n = effect(key, "slowpoke")
    if n == 1:
        time.sleep(1.0)
    return f"done on {n}"


@wf.step
def long_step(key: str, seconds: float) -> str:
    effect(key, "long")
    time.sleep(seconds)
    return "long done"


@wf.workflow
async def chain(key: str, n: int) -> int:
    total = 0
    for i in range(n):
        total += await work(key, i)
    return total


@wf.workflow
async def retrying(key: str, failures: int) -> str:
    first = await flaky(key, failures)
    await bouncy(key)
    return first


@wf.workflow
async def sleepy(key: str, seconds: float) -> int:
    a = await work(key, 0)
    await sleep(seconds)
    return a + await work(key, 1)


@wf.workflow
async def hooked(key: str) -> Any:
    await work(key, 0)
    hook = create_hook(token=f"hook-{key}")
    payload = await hook
    hook.dispose()
    await work(key, 1)
    return payload


@wf.workflow
async def parallel(key: str, k: int) -> int:
    return sum(await asyncio.gather(*(fan(key, i) for i in range(k))))


@wf.workflow
async def doomed(key: str) -> str:
    return await suicide(key)


@wf.workflow
async def timed(key: str) -> str:
    return await slowpoke(key)


@wf.workflow
async def slow(key: str, seconds: float, n: int) -> int:
    for _ in range(n):
        await long_step(key, seconds)
    return n


@wf.step
def tick(i: int) -> int:
    return i


@wf.workflow
async def tight(n: int) -> int:
    """Steps with empty bodies: slots mint event ids as fast as they can commit."""
    total = 0
    for i in range(n):
        total += await tick(i)
    return total
