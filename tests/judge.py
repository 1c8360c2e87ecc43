"""The real judge: the REAL workflow runtime, npm-installed, driving runs on a test database.

Why: a repair is only right if the runtime that wedged accepts it. So the judge tests wedge a
run with the real runtime (`workflow` / `@workflow/core` / `@workflow/cli` / `@workflow/builders`
5.0.0-beta.39 on `@workflow/world-postgres` 5.0.0-beta.29, reference peer-install.md), repair it
with `wfctl repair --apply`, start the runtime again and require the run to complete.

- `tests/node/runtime/` is the npm project: package.json + lock (with the registry overrides),
  the workflows (`workflows/*.ts`, compiled by `wf build`) and `server.mjs`, a node:http server
  on loopback that serves the compiled flow route while the world's graphile runner delivers to
  it (`world.start()`, which also re-enqueues every active run, as a restarted worker does).
- `build_runtime()` installs it into `.cache/node-runtime/` (gitignored) keyed by a hash of
  package.json + lock, and builds the workflows into `build-<hash of the sources>/`, so a
  session installs and builds at most once and checkouts with other workflows do not rebuild
  each other's bundle (a file lock serialises concurrent sessions).
- `KITS` names one such npm project per release: beta.29 (above), and every published
  release with a runtime set (`conftest.RELEASE_VERSIONS`: 4.1.1 ... 4.3.7, 5.0.0-beta.27;
  `tests/node4x/<version>`: manifest + lock, plain `npm install`, no overrides, installed by
  `conftest.install_release_package`), which share `tests/node/v4/` (server.mjs for the two
  routes of a two-task queue, runid-hook.mjs, the workflows); `build_runtime(kit)` /
  `setup_world(kit, dsn)` (the release's own setup bin).
- `Runtime(dsn, log_dir, env)` is one runtime process against one database: `start()`,
  `stop()` (SIGTERM, then SIGKILL), `kill()` (SIGKILL: the crash half of a fault window),
  `start_run()`, `stats()` (flow deliveries per run), `run_info()` (status + hydrated output).
- `wait_for_status()` / `stays()` poll the run row with bounded loops.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg

from tests.conftest import (
    NODE4X,
    RELEASE_VERSIONS,
    install_release_package,
    node_available,
    psycopg_to_url,
    release_cache,
)

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_SRC = ROOT / "tests" / "node" / "runtime"
RUNTIME_CACHE = ROOT / ".cache" / "node-runtime"
LOCK_FILES = ("package.json", "package-lock.json")
SOURCES = ("server.mjs", "workflows")
FLOW_BUNDLE = Path(".well-known") / "workflow" / "v1" / "flow.mjs"


@dataclass(frozen=True)
class Kit:
    """One release line's runtime as an npm project: where its manifest + lock live (`src`),
    where it is installed (`cache`), the server and workflows copied into each build
    (`sources`, from `sources_dir`), and the bundle `wf build` must leave (`bundle`).

    Why: the judge drives each release with that release's own runtime (beta.29 with core
    5.0.0-beta.39; each published release with the core its users got, e.g. 4.3.7 with 4.8.9,
    4.1.1 with 4.2.4, 5.0.0-beta.27 with 5.0.0-beta.35), and each installs into its
    own cache folder so no release's install or build replaces another's."""

    name: str
    src: Path
    cache: Path
    sources_dir: Path
    sources: tuple[str, ...]
    bundle: Path
    commonjs: bool = False  # the bundles are CommonJS inside an ESM project (4.x `wf build`)
    setup_bin: str = "node_modules/@workflow/world-postgres/bin/setup.js"


BETA29 = Kit("beta29", RUNTIME_SRC, RUNTIME_CACHE, RUNTIME_SRC, SOURCES, FLOW_BUNDLE)
_V4_SOURCES = ROOT / "tests" / "node" / "v4"
_V4_FILES = ("server.mjs", "runid-hook.mjs", "workflows")
_V4_BUNDLE = Path(".well-known") / "workflow" / "v1" / "flow.js"


def release_kit(version: str) -> Kit:
    """A published release's kit: its pinned set (tests/node4x/<version>, shared with the
    setup-only users of conftest.install_release_package) and the 4.x server and workflows."""
    if version.startswith("5."):  # a 5.0 beta's `wf build` emits ESM routes
        return Kit(version, NODE4X / version, release_cache(version), _V4_SOURCES, _V4_FILES,
                   FLOW_BUNDLE)  # fmt: skip
    return Kit(version, NODE4X / version, release_cache(version), _V4_SOURCES, _V4_FILES,
               _V4_BUNDLE, True)  # fmt: skip


KITS = {"beta29": BETA29, **{v: release_kit(v) for v in RELEASE_VERSIONS}}

_counter = itertools.count(1)

available = node_available


def workflow_id(workflow: str, module: str = "judge") -> str:
    """The id `wf build` gives `workflows/<module>.ts:<workflow>` (the runs' `workflow_name`)."""
    return f"workflow//./workflows/{module}//{workflow}"


class JudgeError(Exception):
    """The runtime process could not be installed, built, started or asked."""


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            rel = f.relative_to(path.parent)
            h.update(str(rel).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _cache_lock(kit: Kit = BETA29) -> Iterator[None]:
    kit.cache.parent.mkdir(parents=True, exist_ok=True)
    with open(kit.cache.parent / f"{kit.cache.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def install_runtime(kit: Kit = BETA29) -> dict[str, float]:
    """npm-install the kit's runtime into its cache (skipped when the stamp matches); timings."""
    timings: dict[str, float] = {}
    if kit.src.parent == NODE4X:  # a release's set: one install for its setup and its runtime
        t0 = time.monotonic()
        install_release_package(kit.name)
        timings["npm_install_s"] = time.monotonic() - t0
        return timings
    digest = _digest([kit.src / n for n in LOCK_FILES])
    stamp = kit.cache / ".installed"
    if stamp.is_file() and stamp.read_text() == digest:
        return timings
    kit.cache.mkdir(parents=True, exist_ok=True)
    (kit.cache / ".built").unlink(missing_ok=True)
    for name in LOCK_FILES:
        shutil.copy(kit.src / name, kit.cache / name)
    t0 = time.monotonic()
    # `npm install` honours the lock (`npm ci` rejects a lock lacking other platforms'
    # optional packages, see conftest.install_real_package).
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=kit.cache,
        check=True,
        timeout=600,
        capture_output=True,
    )
    timings["npm_install_s"] = time.monotonic() - t0
    stamp.write_text(digest)
    return timings


def build_runtime(kit: Kit = BETA29) -> tuple[Path, dict[str, float]]:
    """Install (if needed) and `wf build` the kit's workflows into a folder named by the digest
    of the sources, `<cache>/build-<digest>/` (node_modules linked to the shared install).
    Why a folder per digest: several checkouts share the cache, and one build folder would be
    rebuilt (its bundle deleted under running runtimes) whenever their workflow sources
    differ."""
    with _cache_lock(kit):
        timings = install_runtime(kit)
        inputs = [kit.src / n for n in LOCK_FILES] + [kit.sources_dir / n for n in kit.sources]
        digest = _digest(inputs)
        folder = kit.cache / f"build-{digest[:16]}"
        stamp = folder / ".built"
        if stamp.is_file() and stamp.read_text() == digest and (folder / kit.bundle).exists():
            return folder, timings
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "node_modules").symlink_to(kit.cache / "node_modules")
        for src in inputs:
            dst = folder / src.name
            if src.is_dir():
                shutil.copytree(src, dst)
            else:
                shutil.copy(src, dst)
        t0 = time.monotonic()
        proc = subprocess.run(
            ["node", "node_modules/@workflow/cli/bin/run.js", "build"],
            cwd=folder,
            timeout=300,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not (folder / kit.bundle).exists():
            raise JudgeError(f"wf build failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        if kit.commonjs:  # the CommonJS bundles inside an ESM project (`"type": "module"`)
            (folder / kit.bundle).parent.joinpath("package.json").write_text(
                '{"type": "commonjs"}\n'
            )
        timings["wf_build_s"] = time.monotonic() - t0
        stamp.write_text(digest)
        return folder, timings


def setup_world(kit: Kit, dsn: str) -> None:
    """The kit's own setup bin on an empty database (4.3.7 `bootstrap`: drizzle + graphile;
    4.1.1 `workflow-postgres-setup`: drizzle only, graphile at the first `world.start()`)."""
    install_runtime_locked(kit)
    env = {**os.environ, "WORKFLOW_POSTGRES_URL": psycopg_to_url(dsn)}
    env.pop("DATABASE_URL", None)
    proc = subprocess.run(
        ["node", kit.setup_bin], cwd=kit.cache, env=env, timeout=300, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise JudgeError(f"{kit.name} setup failed:\n{proc.stdout}\n{proc.stderr}")


def install_runtime_locked(kit: Kit) -> dict[str, float]:
    with _cache_lock(kit):
        return install_runtime(kit)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Runtime:
    """One real runtime process (server.mjs) against one database."""

    def __init__(
        self,
        dsn: str,
        log_dir: Path,
        env: dict[str, str] | None = None,
        name: str = "runtime",
        folder: Path | None = None,
    ) -> None:
        self.dsn = dsn
        self.url = psycopg_to_url(dsn)
        self.folder = folder if folder is not None else build_runtime()[0]
        self.extra_env = dict(env or {})
        self.log_path = log_dir / f"{name}-{next(_counter)}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    # --- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> Runtime:
        assert self.proc is None, "already started"
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFLOW_")}
        env.pop("DATABASE_URL", None)
        env.update(
            {
                "WORKFLOW_POSTGRES_URL": self.url,
                "PORT": str(self.port),
                "WORKFLOW_POSTGRES_WORKER_CONCURRENCY": "10",
                "JUDGE_PARENT_PID": str(os.getpid()),  # it exits when we are gone
                **self.extra_env,
            }
        )
        log = open(self.log_path, "wb")  # noqa: SIM115 - owned by the process's lifetime
        try:
            self.proc = subprocess.Popen(
                ["node", "server.mjs"],
                cwd=self.folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while '"ready":true' not in self.log_text():
            if self.proc.poll() is not None:
                raise JudgeError(f"runtime exited {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise JudgeError(f"runtime not ready after {timeout}s:\n{self.log_tail()}")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Graceful stop (SIGTERM: the runner stops, the pool closes); SIGKILL if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL: the process dies mid-statement, as in a crash."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.kill()
        self.proc.wait(timeout=10)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> Runtime:
        return self.start() if self.proc is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- logs -----------------------------------------------------------------------------

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, chars: int = 6000) -> str:
        return f"--- {self.log_path} ---\n{self.log_text()[-chars:]}"

    def flow_lines(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """The `{"flow": ...}` delivery lines server.mjs printed (for one run)."""
        out = []
        for line in self.log_text().splitlines():
            if line.startswith("{") and '"flow":' in line:
                with contextlib.suppress(ValueError):
                    flow = json.loads(line)["flow"]
                    if run_id is None or flow.get("runId") == run_id:
                        out.append(flow)
        return out

    # --- the test endpoints -------------------------------------------------------------------

    def _call(self, path: str, body: Any = None, timeout: float = 15.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method="GET" if data is None else "POST",
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())

    def start_run(
        self, workflow: str, args: list[Any], run_id: str | None = None, module: str = "judge"
    ) -> str:
        """`start()` the workflow `workflows/<module>.ts:<workflow>`; `run_id` fixes its id."""
        body: dict[str, Any] = {"workflowId": workflow_id(workflow, module), "args": args}
        if run_id is not None:
            body["runUlid"] = run_id.removeprefix("wrun_")
        got = self._call("/judge/start", body)["runId"]
        assert run_id is None or got == run_id, (got, run_id)
        return str(got)

    def resume_hook(self, token: str, payload: Any) -> str:
        """`resumeHook(token, payload)`; the run id the hook belongs to."""
        return str(self._call("/judge/resume", {"token": token, "payload": payload})["runId"])

    def cancel(self, run_id: str) -> None:
        """`getRun(run_id).cancel()`."""
        self._call("/judge/cancel", {"runId": run_id})

    def stats(self) -> dict[str, dict[str, int]]:
        """`{"started": {run: n}, "answered": {run: n}}`: flow deliveries received/answered."""
        return dict(self._call("/judge/stats"))

    def deliveries(self, run_id: str) -> tuple[int, int]:
        """(started, answered) flow deliveries for one run."""
        stats = self.stats()
        return stats["started"].get(run_id, 0), stats["answered"].get(run_id, 0)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the process used so far (Linux /proc)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run_info(self, run_id: str) -> dict[str, Any]:
        """The runtime's own view: `{status, returnValue?}` (the output hydrated by the SDK)."""
        return dict(self._call(f"/judge/run?runId={run_id}"))


# --- polling the database (bounded) ----------------------------------------------------------


def run_status(dsn: str, run_id: str) -> str | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()
    return None if row is None else str(row[0])


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1
) -> Any:
    """Poll `predicate` until truthy; TimeoutError naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout}s")
        time.sleep(interval)


def wait_for_status(dsn: str, run_id: str, statuses: set[str], timeout: float) -> str:
    """The run's status once it is one of `statuses`; TimeoutError with the last one seen."""
    seen: list[str | None] = [None]

    def check() -> str | None:
        seen[0] = run_status(dsn, run_id)
        return seen[0] if seen[0] in statuses else None

    try:
        return str(wait_until(check, timeout, f"run {run_id} in {sorted(statuses)}"))
    except TimeoutError as exc:
        raise TimeoutError(f"{exc} (last status {seen[0]!r})") from None


def stays(dsn: str, run_id: str, status: str, seconds: float) -> None:
    """Assert the run keeps `status` for `seconds` (sampled every 0.2 s)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = run_status(dsn, run_id)
        assert now == status, f"run {run_id} left {status!r}: now {now!r}"
        time.sleep(0.2)
