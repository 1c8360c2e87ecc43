"""A scheduled job: a report every 15 minutes, run once per tick by whichever worker wins.

    wfctl worker docs/examples/scheduled_report.py      # on as many hosts as you like

Each `wfctl worker` serving this module starts the tick's run when it is due (UTC); the tick's
run id is derived from the workflow and the tick, so several workers make ONE run, and after
a restart the ticks missed within `catchup` are started too (docs/runtime.md, Schedules). The
workflow gets the tick as its argument: use it, not the clock, to pick the data.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from wfctl.runtime import Workflows

wf = Workflows()
sent: list[str] = []  # the tests read it


@wf.step
def count_orders(since: str, until: str) -> int:
    return 0 if since >= until else 42  # a query over [since, until) in a real job


@wf.step
def send_report(tick: str, orders: int) -> str:
    sent.append(f"{tick}: {orders} orders")
    return f"report for {tick} sent"


@wf.workflow(schedule="*/15 * * * *", catchup="2h")
async def quarter_hour_report(tick: datetime) -> str:
    orders = await count_orders((tick - timedelta(minutes=15)).isoformat(), tick.isoformat())
    return await send_report(tick.isoformat(), orders)
