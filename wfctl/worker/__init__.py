"""`wfctl worker`: runs of the runtime executed by many processes, leased from a queue in
Postgres (docs/worker.md). `queue` composes the SQL of `sql/worker/`; `daemon` is the
process (slots, heartbeat, recovery, LISTEN)."""
