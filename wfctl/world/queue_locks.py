"""graphile-worker's lock rule, in one place: how long a job lock counts as a live worker's.

graphile-worker 0.16.6 keeps no worker registry and no heartbeat: a job's lock is only
`locked_by` and `locked_at`, and its own sweep (`reset_locked` at worker start, and the
`get_job` claim query) treats a lock older than 4 hours as abandoned and takes the job again.
So wfctl reads a lock younger than GRAPHILE_LOCK_RESET as a delivery that may still be writing
(the repair guard refuses the run), and an older one as already free for graphile. Every query
of wfctl's that applies the rule takes it as the `lock_reset` parameter from here:
sql/repair/locked_jobs.sql (the repair guard, gc's deferrals), sql/repair/hold_run_jobs.sql
(slot-log rewrites), sql/gc/plan_jobs.sql and delete_jobs.sql (gc, bulk cancel) and
sql/checks/WF135.sql. graphile's own admin functions (`permanently_fail_jobs`, used by
sql/repair/fail_jobs.sql) apply the same 4 hours internally.
"""

from __future__ import annotations

from datetime import timedelta

GRAPHILE_LOCK_RESET = timedelta(hours=4)
