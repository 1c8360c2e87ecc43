"""Driving a run in-process from a test: create it, drive it with a registry's workflows,
read its event types. One copy for the test files that drive their own workflow modules."""

from __future__ import annotations

from typing import Any

from wfctl.runtime import executor as ex
from wfctl.runtime.registry import Workflows
from wfctl.runtime.store import Store


def start(store: Store, wdef: Any, *args: Any) -> str:
    return ex.create(wdef, list(args), conn=store.conn).run_id


def drive(
    registry: Workflows, store: Store, run_id: str, *, wait: bool = False, timeout: float = 30
) -> ex.Done:
    runner = ex.Executor(registry, store)
    try:
        return runner.drive(run_id, wait=wait, timeout=timeout if wait else None)
    finally:
        runner.close()


def types(store: Store, run_id: str) -> list[str]:
    return [e.type for e in store.read_events(run_id)]
