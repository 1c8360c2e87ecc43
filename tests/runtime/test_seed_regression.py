"""Regression test of seed run-creation-not-atomic (#3656), and its entity-event sibling.

A `pg_sleep` trigger widens the window inside the marker insert and the event inserts; a
poller on another connection, every 10 ms, must never see a run without its slot marker and
its first event, nor any entity row without its event. (Upstream beta.35: 79 observations in
a 1 s window; the fix: 0.)
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from tests import faults
from tests.runtime import flows
from wfctl.runtime.executor import Executor, create
from wfctl.world import ids

SLOW_MARKER = """
CREATE OR REPLACE FUNCTION public.wfctl_fault_slow_marker() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
CREATE TRIGGER wfctl_fault_slow_marker BEFORE INSERT ON workflow.workflow_event_slots
FOR EACH ROW EXECUTE FUNCTION public.wfctl_fault_slow_marker();
"""
DROP_MARKER = """
DROP TRIGGER IF EXISTS wfctl_fault_slow_marker ON workflow.workflow_event_slots;
DROP FUNCTION IF EXISTS public.wfctl_fault_slow_marker();
"""

# Each query returns offending ids as seen by a concurrent reader.
INVARIANTS = {
    "run without run_created": """
        SELECT r.id FROM workflow.workflow_runs r WHERE NOT EXISTS (
          SELECT 1 FROM workflow.workflow_events e
          WHERE e.run_id = r.id AND e.type = 'run_created')""",
    "step row without step_created": """
        SELECT s.step_id FROM workflow.workflow_steps s WHERE NOT EXISTS (
          SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = s.run_id
          AND e.correlation_id = s.step_id AND e.type = 'step_created')""",
    "completed step without step_completed": """
        SELECT s.step_id FROM workflow.workflow_steps s WHERE s.status = 'completed'
        AND NOT EXISTS (SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = s.run_id
          AND e.correlation_id = s.step_id AND e.type = 'step_completed')""",
    "wait row without wait_created": """
        SELECT w.wait_id FROM workflow.workflow_waits w WHERE NOT EXISTS (
          SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = w.run_id
          AND w.wait_id = e.run_id || '-' || e.correlation_id AND e.type = 'wait_created')""",
}
SLOT_INVARIANTS = {
    "run without its slot marker": """
        SELECT r.id FROM workflow.workflow_runs r WHERE NOT EXISTS (
          SELECT 1 FROM workflow.workflow_event_slots m WHERE m.run_id = r.id)""",
    "marked run without run_created at slot 1": """
        SELECT m.run_id FROM workflow.workflow_event_slots m WHERE NOT EXISTS (
          SELECT 1 FROM workflow.workflow_events e WHERE e.run_id = m.run_id
          AND e.id = 'evnt_00000000000000000000000001' AND e.type = 'run_created')""",
}


def test_poller_never_sees_half_written_state(world, conn, store) -> None:
    run_id = ids.prefixed("wrun")
    checks = dict(INVARIANTS, **(SLOT_INVARIANTS if store.slots else {}))
    seen: list[tuple[str, Any]] = []
    polls = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal polls
        with psycopg.connect(world.dsn, autocommit=True) as reader:
            while not stop.is_set():
                for name, query in checks.items():
                    seen.extend((name, r[0]) for r in reader.execute(query).fetchall())
                polls += 1
                time.sleep(0.01)

    with psycopg.connect(world.dsn, autocommit=True) as admin:
        if store.slots:
            admin.execute(SLOW_MARKER)
        slow = [
            faults.slow_insert(admin, "workflow_events", run_id, t, seconds=0.3, times=1)
            for t in ("run_created", "step_created", "step_completed", "wait_created")
        ]
        poller = threading.Thread(target=poll)
        poller.start()
        try:
            create(flows.sleeper, [0.05], run_id=run_id, conn=conn)
            ex = Executor(flows.wf, store)
            done = ex.drive(run_id, wait=True, timeout=20)
            ex.close()
            create(flows.sequential, [3], conn=conn)
        finally:
            stop.set()
            poller.join(10)
            for fault in slow:
                fault.drop()
            admin.execute(DROP_MARKER)
            faults.drop_faults(admin)
    assert done.status == "completed"
    # the poller really ran through the slow windows (4 x 0.3 s of slowed inserts at a 10 ms
    # poll: ~100 polls when idle; a loaded box manages far fewer, never none)
    assert polls >= 10
    assert seen == []
