"""Child workflows and a schedule served by real worker processes
(`wfctl worker tests.worker.flow_jobs`); bodies record effects like tests/worker/flows.py."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from tests.worker.flows import effect
from wfctl.runtime import Workflows, start_child

wf = Workflows()


@wf.step
def child_work(key: str) -> str:
    effect(key, "child_work")
    time.sleep(1.5)  # long enough for the test to kill the worker in it
    return f"child of {key}"


@wf.workflow
async def child_job(key: str) -> str:
    return await child_work(key)


@wf.step
def parent_note(key: str, got: str) -> str:
    effect(key, "parent_note")
    return got.upper()


@wf.workflow
async def parent_job(key: str) -> dict[str, Any]:
    child = await start_child(child_job, key)
    got = await child
    return {"child": child.run_id, "note": await parent_note(key, got)}


@wf.step
def tick_effect(at: str) -> str:
    effect("tick", at)
    return at


@wf.workflow(schedule="* * * * * */2", catchup="30s")
async def every_two_seconds(tick: datetime) -> str:
    return await tick_effect(tick.isoformat())
