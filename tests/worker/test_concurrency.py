"""Many runs in flight in one worker process: every slot mints event ids at once.

In a beta.29-shaped world every event id is a `wevt_` ULID minted by the worker and the
events' primary key is the id alone, so two slots minting the same id is a
`workflow_events_pkey` violation: the transaction rolls back and the run is replayed (the
executor logs `...; replaying` at -v). With one generator per process that cannot happen;
this test drives enough concurrent runs of empty steps to make it happen on a generator per
slot, and requires that no transaction was refused at all.
"""

from __future__ import annotations

from typing import Any

from tests.worker import flows
from tests.worker.conftest import start, statuses, wait_until

RUNS = 24
STEPS = 60


def test_concurrent_runs_in_one_worker_never_mint_one_id_twice(
    beta_world: Any, workers: Any
) -> None:
    with beta_world.connect() as conn:
        run_ids = [start(conn, flows.tight, STEPS) for _ in range(RUNS)]
        w = workers(beta_world.dsn, "--concurrency", "12")
        wait_until(
            lambda: set(statuses(conn, run_ids).values()) == {"completed"},
            300,
            "every run completed",
        )
        assert w.term() == 0
        log = w.log()
        assert "replaying" not in log, log[-3000:]
        rows = conn.execute(
            "SELECT count(*), count(DISTINCT id), bool_and(id LIKE 'wevt\\_%%')"
            " FROM workflow.workflow_events WHERE run_id = ANY(%s)",
            (run_ids,),
        ).fetchone()
        # run_created, run_started, 3 per step, run_completed
        assert rows == (RUNS * (3 + 3 * STEPS), RUNS * (3 + 3 * STEPS), True)
