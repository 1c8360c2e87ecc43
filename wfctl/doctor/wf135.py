"""WF135: a queue job held by a silent worker (who holds the lock, since when, alive?)."""

from typing import Any

from wfctl.doctor.base import Check, Explanation, Finding, Needs, Severity


class LockCheck(Check):
    """A lock on a job of a run that has ended is info: nothing is stuck behind it."""

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        *columns, ended = row
        if not ended:
            return Finding(self.code, *columns)
        run_id, entity_id, observed_at, in_flight, detail = columns
        detail += "; the run has ended: the lock holds nothing up (graphile frees it after 4 h)"
        return Finding(self.code, run_id, entity_id, observed_at, in_flight, detail, Severity.INFO)


CHECK = LockCheck(
    code="WF135",
    title="queue job held by a silent worker",
    severity=Severity.WARNING,
    remedy="check the holder is gone, then wfctl repair --unlock-older-than AGE "
    "(dry run: shows the locks), and again with --apply",
    explanation=Explanation(
        meaning="A queue job for the run has been locked for longer than --min-age by the "
        "worker named in locked_by, and the run's log has been silent as long. The detail "
        "shows the holder, since when, the run's last event and how many other client "
        "sessions are connected (0: no worker is connected, the holder is dead).",
        why_stuck="graphile-worker 0.16.6 has no heartbeat: a worker killed inside a delivery "
        "keeps its job locked until graphile's 4-hour sweep, so the run is not delivered, and "
        "wfctl refuses every repair of the run while the lock stands (it is the only sign of "
        "a live writer).",
        cause="A worker process killed (SIGKILL, OOM, node eviction) during a delivery. On "
        "beta.29 a live delivery cannot hold its lock much past 300 s (undici's fetch "
        "deadline); from beta.43 on an inline step can legitimately run longer.",
        repair="With --unlock-older-than AGE (and/or --unlock-dead-worker ID): list the locks "
        "older than AGE (dry run), then release exactly those, each re-checked under the job's "
        "row lock (same holder, still older than AGE), as graphile's own sweep does "
        "(locked_at/locked_by cleared, run_at brought to now), audited. When the run has "
        "something else to repair, its locks are released in that repair's transaction, so "
        "no worker takes the job before the run is healed. Younger locks are never touched.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
