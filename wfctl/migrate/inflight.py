"""Runs in flight across a release upgrade: which ones the target runtime continues, which
fail, and the guarded rewrite of a run's log that carries it across.

Why runs fail: a run's replay must ask for the correlation ids (`step_`, `wait_`, `hook_`)
its log holds, and every core derives them in the workflow VM from a seeded ARC4 generator
(`seedrandom`) feeding `ulid`'s monotonic factory at a fixed time (wfctl/world/nodeids.py).
The 4.x cores seed it with `<run id>:<workflow name>:<started_at ms>` and stamp the ids with
`started_at`; the 5.0 cores seed it with `<run id>:<workflow name>:<deployment id>` and stamp
them with the run id's own ULID time. So a 4.x run replayed by a 5.0 core asks for ids its log
does not hold: `Replay could not consume event: eventType=step_created` (CORRUPTED_EVENT_LOG).

The carry: every id is `time + (R + k)`, R the random part drawn at the first call, k its
ordinal. wfctl finds R (and the draws before it) from the source rule, checks that every id
of the run is one of that sequence, and maps the k-th source id onto the target's k-th id, in
the events, the step/hook/wait rows, and the run's queue (the 4.x `<prefix>steps` jobs, which
the 5.0 runtimes do not serve, are retired and a flow delivery takes their place at the same
time). Refused, never guessed: an id the source rule did not mint, a hook token the runtime's
generator minted (the target's replay would mint another and diverge; callers hold the old
one), an id copied inside a payload, a job a worker holds now.

Which core derives ids how, and whether its steps run as their own jobs, is release data:
`Runtime.correlation_ids` in wfctl/world/releases.py, beside the other runtime facts (read
from the published sources named there), proven by the real runtimes on real worlds
(tests/migrate_inflight).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError, UsageError, WfctlError
from wfctl.ops import audit, wakeup
from wfctl.runtime.store import DEPLOYMENT_ID as PYTHON_RUNTIME
from wfctl.world import codec, ids, nodeids, releases
from wfctl.world.model import inspect
from wfctl.world.queue_locks import GRAPHILE_LOCK_RESET
from wfctl.world.releases import Derivation

# "unknown": no analysis was possible (a version without runtime facts); the road counts such
# a run as one that may fail (wfctl.migrate.road.active_runs_unknown).
Fate = Literal["continues", "fails", "carried", "unknown"]

# How many draws of the VM's Math.random may come before a run's first id (workflow code that
# calls Math.random or crypto first); the search for R stops there.
MAX_SKIP = 256
MAX_ORDINAL = 1 << 20  # more ids than any run logs: beyond it, a match would be chance


@dataclass(frozen=True)
class CoreFacts:
    """One package version's runtime facts as the analysis uses them (from the release graph:
    `releases.Runtime.correlation_ids`)."""

    version: str
    ids: Derivation
    step_jobs: bool  # steps run as their own `<prefix>steps` jobs


@dataclass(frozen=True)
class RunFate:
    """What the target runtime does with one run in flight."""

    run_id: str
    workflow_name: str
    status: str
    reason: str
    fate: Fate

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class CarryPlan:
    """A run's id rewrite (source id -> target id), or why there is none."""

    run_id: str
    name: str
    status: str
    mapping: dict[str, str] = field(default_factory=dict)
    skip: int = 0
    refusal: str | None = None
    native: bool = False  # the target's rule mints the ids the log holds (or it holds none)
    ids: int = 0  # correlation ids in the log


@dataclass(frozen=True)
class Carried:
    """The outcome of one run's carry."""

    run_id: str
    outcome: str  # "carried" | "continues" | "refused" | "gone"
    reason: str
    ids: int = 0
    retired_jobs: tuple[int, ...] = ()
    audit_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def version_key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
    """The release graph's semver order, for a version given by the caller (exit 64 when it is
    none)."""
    if not releases.is_version(version.strip()):
        raise UsageError(f"not a package version: {version!r}", hint="e.g. 4.1.1, 5.0.0-beta.29")
    return releases.version_key(version.strip())


def facts_for(version: str) -> CoreFacts:
    """How a package version's core derives ids, from the release graph; exit 3 (unknown)
    where the graph does not say."""
    version_key(version)  # a version at all (exit 64)
    found = releases.correlation_ids(version)
    if found is not None:
        return CoreFacts(version, found.ids, found.step_jobs)
    covered = ", ".join(v for v in releases.PACKAGES if releases.correlation_ids(v))
    raise WfctlError(
        f"no runtime facts for @workflow/world-postgres {version}: which ids its core mints "
        "is unknown",
        hint=f"the runs in flight are judged for {covered}; drain them before this upgrade",
    )


def _pair(source: str, target: str) -> tuple[CoreFacts, CoreFacts]:
    if version_key(target) < version_key(source):
        raise RefusedError(
            f"{source} -> {target} is a downgrade", hint="nothing was written; runs are judged "
            "only on the road forward"
        )  # fmt: skip
    return facts_for(source), facts_for(target)


def _seed(rule: Derivation, run: dict[str, Any]) -> str:
    return ":".join(str(run[f]) for f in rule.seed)


def _time_ms(rule: Derivation, run: dict[str, Any]) -> int | None:
    if rule.time == "id":
        body = str(run["id"]).partition("_")[2]
        return nodeids.decode_time(body) if ids.is_ulid(body) else None
    value = run.get(rule.time)
    return None if value is None else int(value)


def _minted(
    rule: Derivation, run: dict[str, Any], bodies: dict[str, str]
) -> tuple[int, int] | None:
    """(draws before the first id, its random part) if `rule` minted every id of `bodies`
    (correlation id -> ULID body) for this run, else None."""
    time_ms = _time_ms(rule, run)
    if time_ms is None or any(nodeids.decode_time(b) != time_ms for b in bodies.values()):
        return None
    if "started_ms" in rule.seed and run["started_ms"] is None:
        return None
    # The first id minted need not be logged (an id minted for nothing the log records): the
    # lowest logged id is R + k for a small k.
    randoms = [nodeids.base32_value(b[nodeids.TIME_LEN :]) for b in bodies.values()]
    lowest, highest = min(randoms), max(randoms)
    for skip, value in nodeids.random_values(_seed(rule, run), MAX_SKIP):
        if value <= lowest and highest - value < MAX_ORDINAL:
            return skip, value
    return None


def plan_run(
    conn: psycopg.Connection[Any], run: dict[str, Any], source: CoreFacts, target: CoreFacts
) -> CarryPlan:
    """Read one run's log and decide: the target mints its ids already (`native`), or its
    rewrite (source id -> target id), or why there is none (nothing written)."""
    plan = CarryPlan(str(run["id"]), str(run["name"]), str(run["status"]))
    with conn.cursor(row_factory=dict_row) as cur:
        log = cur.execute(sql.load("migrate/inflight_run_log"), {"run_id": plan.run_id}).fetchall()
    correlation = sorted({str(e["correlation_id"]) for e in log})
    plan.ids = len(correlation)
    bodies: dict[str, str] = {}
    for cid in correlation:
        prefix, _, body = cid.partition("_")
        if prefix not in ("step", "wait", "hook") or not ids.is_ulid(body):
            plan.refusal = f"correlation id {cid} is not a step/wait/hook ULID"
            return plan
        bodies[cid] = body
    if not bodies or _minted(target.ids, run, bodies) is not None:
        plan.native = True
        return plan
    found = _minted(source.ids, run, bodies)
    dst_time = _time_ms(target.ids, run)
    if found is None or dst_time is None:
        plan.refusal = (
            f"its ids were minted by neither the source rule ({source.ids.summary}) nor the "
            "target's: cannot derive what the target will ask for"
        )
        return plan
    plan.skip, first_src = found
    src_seed = _seed(source.ids, run)
    tokens = _tokens(log)
    if tokens:
        window = plan.skip + nodeids.RANDOM_LEN + 34 * len(tokens) + MAX_SKIP
        minted = nodeids.generated_tokens(src_seed, window)
        generated = sorted(t for t in tokens if t in minted)
        if generated:
            plan.refusal = (
                f"hook token {generated[0]} was minted by the runtime (createHook() without a "
                "token): the target's replay mints another and diverges"
            )
            return plan
    first_dst = nodeids.first_random(_seed(target.ids, run), plan.skip)
    for cid, body in bodies.items():
        ordinal = nodeids.base32_value(body[nodeids.TIME_LEN :]) - first_src
        prefix = cid.partition("_")[0]
        plan.mapping[cid] = f"{prefix}_{nodeids.correlation_body(dst_time, first_dst, ordinal)}"
    with conn.cursor() as cur:
        hits = cur.execute(
            sql.load("migrate/inflight_ids_in_payloads"),
            {"run_id": plan.run_id, "bodies": [cid.partition("_")[2] for cid in correlation]},
        ).fetchall()
    if hits:
        where = ", ".join(f"{src} ({n})" for src, n in hits)
        plan.refusal = f"its correlation ids also occur inside payloads: {where}"
    return plan


def _tokens(log: Iterable[dict[str, Any]]) -> list[str]:
    out = []
    for e in log:
        if e["type"] != "hook_created":
            continue
        data = codec.decode(e["payload_cbor"]) if e["payload_cbor"] is not None else e["payload"]
        token = data.get("token") if isinstance(data, dict) else None
        if isinstance(token, str):
            out.append(token)
    return out


def _jobs(
    conn: psycopg.Connection[Any], job_prefix: str, run_id: str | None
) -> list[dict[str, Any]]:
    """Live jobs of the flows/steps tasks: every run's (plan), or one run's under FOR UPDATE
    (carry)."""
    params: dict[str, Any] = {"task": f"{job_prefix}flows", "lock_reset": GRAPHILE_LOCK_RESET}
    name = "migrate/inflight_run_jobs"
    if run_id is not None:
        name, params["run_id"] = "migrate/inflight_lock_jobs", run_id
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql.load(name), params).fetchall()


def _active(conn: psycopg.Connection[Any], run_ids: Sequence[str] | None) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            sql.load("migrate/inflight_active_runs"),
            {"run_ids": list(run_ids) if run_ids is not None else None},
        ).fetchall()


def _fate(
    conn: psycopg.Connection[Any],
    run: dict[str, Any],
    source: CoreFacts,
    target: CoreFacts,
    jobs: list[dict[str, Any]],
) -> tuple[RunFate, CarryPlan]:
    run_id, name, status = str(run["id"]), str(run["name"]), str(run["status"])
    if run["deployment_id"] == PYTHON_RUNTIME:
        why = "a run of wfctl's own runtime: its worker replays it, not the package's runtime"
        return RunFate(run_id, name, status, why, "continues"), CarryPlan(run_id, name, status)
    steps = [j for j in jobs if str(j["identifier"]).endswith("steps")]
    running = [j for j in jobs if j["running"]]
    orphaned = bool(steps) and not target.step_jobs
    plan = plan_run(conn, run, source, target)
    moved = f"; {len(steps)} step job(s) moved to a flow delivery" if orphaned else ""
    fails = (
        f"the target's replay asks for other ids ({target.ids.summary}; the source: "
        f"{source.ids.summary}): CORRUPTED_EVENT_LOG at its first replay"
    )
    if plan.refusal is not None:
        fate = RunFate(run_id, name, status, f"{fails}; no carry: {plan.refusal}", "fails")
    elif running and (plan.mapping or orphaned):
        held = f"a worker ({running[0]['locked_by']}) holds its job now"
        fate = RunFate(run_id, name, status, f"{held}: stop the source runtime, then carry",
                       "fails")  # fmt: skip
    elif plan.mapping:
        fate = RunFate(run_id, name, status,
                       f"carry rewrites {len(plan.mapping)} id(s) to the target's rule{moved}",
                       "carried")  # fmt: skip
    elif orphaned:
        fate = RunFate(run_id, name, status, f"the target serves no steps task{moved}", "carried")
    else:
        why = (
            f"its {plan.ids} id(s) are the ones the target mints ({target.ids.summary})"
            if plan.ids
            else "no correlation id logged yet: the target's replay mints its own"
        )
        fate = RunFate(run_id, name, status, why, "continues")
    return fate, plan


def assess(
    conn: psycopg.Connection[Any], source: str, target: str, *, job_prefix: str = "workflow_"
) -> list[RunFate]:
    """Every run in flight and what the target release's runtime will do with it (read-only:
    the plan names them before anything is written)."""
    src, dst = _pair(source, target)
    world = inspect(conn, with_drift=False)
    world.require_present()
    world.require_visible("judge the runs in flight")
    by_run: dict[str, list[dict[str, Any]]] = {}
    for job in _jobs(conn, job_prefix, None) if world.has_graphile else []:
        by_run.setdefault(str(job["run_id"]), []).append(job)
    return [_fate(conn, run, src, dst, by_run.get(str(run["id"]), []))[0]
            for run in _active(conn, None)]  # fmt: skip


def carry(
    conn: psycopg.Connection[Any],
    run_ids: Sequence[str],
    source: str,
    target: str,
    *,
    reason: str,
    job_prefix: str = "workflow_",
) -> list[Carried]:
    """Rewrite each run's log so the target release's runtime continues it: one transaction
    per run, everything re-read under the run's lock, audited in wfctl.repair_log (`carry`).
    Run the source runtime down first: a source runtime replaying a carried run would itself
    meet ids it does not mint."""
    src, dst = _pair(source, target)
    world = inspect(conn, with_drift=False)
    world.require_present()
    world.require_complete()
    world.require_writable("carry runs across an upgrade", world=False)
    audit.require(conn)
    out = []
    for run_id in run_ids:
        try:
            with conn.transaction():
                out.append(
                    _carry_one(conn, run_id, src, dst, world.has_graphile, reason, job_prefix)
                )
        except RefusedError as exc:  # rolled back: this run is left as it was
            out.append(Carried(run_id, "refused", exc.message))
        except psycopg.errors.LockNotAvailable:
            out.append(Carried(run_id, "refused", "its run row or a job is locked (lock_timeout)"))
    return out


def _carry_one(
    conn: psycopg.Connection[Any],
    run_id: str,
    source: CoreFacts,
    target: CoreFacts,
    graphile: bool,
    reason: str,
    job_prefix: str,
) -> Carried:
    with conn.cursor(row_factory=dict_row) as cur:
        locked = cur.execute(sql.load("migrate/inflight_lock_run"), {"run_id": run_id}).fetchone()
    if locked is None:
        return Carried(run_id, "gone", "no such run")
    runs = _active(conn, [run_id])
    if not runs:
        return Carried(run_id, "gone", f"the run is {locked['status']} now: nothing to carry")
    run = runs[0]
    jobs = _jobs(conn, job_prefix, run_id) if graphile else []
    fate, plan = _fate(conn, run, source, target, jobs)
    if fate.fate != "carried":
        return Carried(run_id, fate.fate if fate.fate == "continues" else "refused", fate.reason)
    mapping = json.dumps(plan.mapping)
    for table in ("events", "steps", "hooks", "waits"):
        conn.execute(
            sql.load(f"migrate/inflight_rewrite_{table}"), {"run_id": run_id, "mapping": mapping}
        )
    retired = _move_step_jobs(conn, run, jobs, target, job_prefix)
    audit_id = audit.record(
        conn,
        action="carry",
        run_id=run_id,
        reason=reason,
        details={
            "source": source.version,
            "target": target.version,
            "source_rule": source.ids.key,
            "target_rule": target.ids.key,
            "skip": plan.skip,
            "mapping": plan.mapping,
            "retired_step_jobs": list(retired),
        },
    )
    return Carried(run_id, "carried", fate.reason, len(plan.mapping), retired, audit_id)


def _move_step_jobs(
    conn: psycopg.Connection[Any],
    run: dict[str, Any],
    jobs: list[dict[str, Any]],
    target: CoreFacts,
    job_prefix: str,
) -> tuple[int, ...]:
    """Retire the run's steps jobs where the target serves no steps task; one flow delivery
    at the earliest of their times takes their place."""
    steps = [j for j in jobs if str(j["identifier"]).endswith("steps")]
    if target.step_jobs or not steps:
        return ()
    task = f"{job_prefix}flows"
    with conn.cursor() as cur:
        rows = cur.execute(
            sql.load("repair/fail_jobs"),
            {
                "job_ids": [int(j["id"]) for j in steps],
                "message": f"wfctl migrate: carried to {task} (the target serves no steps task)",
            },
        ).fetchall()
    retired = tuple(int(r[0]) for r in rows)
    if len(retired) != len(steps):
        raise RefusedError(f"run {run['id']}: a step job was taken by a worker meanwhile")
    # The replay then finds the step unfinished and runs it (the 5.0 cores run steps inside
    # the flow delivery); due when the steps job was (a step's retry time is kept).
    run_at = min(j["run_at"] for j in steps)
    wakeup.add_job(conn, task, str(run["id"]), str(run["name"]), 3, run_at)
    return retired
