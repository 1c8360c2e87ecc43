// The judge's runtime process: the REAL workflow runtime (workflow/@workflow/core 5.0.0-beta.39)
// on the REAL @workflow/world-postgres 5.0.0-beta.29, without a web framework.
//
// A node:http server on 127.0.0.1:$PORT serves the route `wf build` compiled
// (.well-known/workflow/v1/flow.mjs); `world.start()` starts the world's graphile runner, which
// delivers queue jobs to that route, and re-enqueues every pending/running run (reference §5.4),
// as any restarted worker does. Env: WORKFLOW_POSTGRES_URL, PORT, and any runtime knob
// (WORKFLOW_MAX_INLINE_STEPS, WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS, ...).
// JUDGE_REENQUEUE=0 skips the startup re-enqueue (see below); JUDGE_FLOW_DOWN=1 answers every
// flow delivery 503, as a broken deployment would.
//
// Test-only endpoints (loopback only):
//   POST /judge/start {workflowId, args, runUlid?}  start() a run; runUlid fixes its id
//        (the client mints run ids, so a fault trigger can name the run before it exists)
//   GET  /judge/stats                               flow deliveries per run: started, answered
//   GET  /judge/run?runId=..                        status, and the hydrated return value
//   POST /judge/resume {token, payload}             resumeHook(token, payload)
//   POST /judge/cancel {runId}                      getRun(runId).cancel()
// JSON lines on stdout: {"delivery": ...} when a flow delivery arrives, {"flow": ...} when it
// is answered (with the status and body), {"ready": true} once up.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { monotonicFactory } from 'ulid';

const port = Number(process.env.PORT);
const here = path.dirname(fileURLToPath(import.meta.url));
process.env.WORKFLOW_TARGET_WORLD ??= '@workflow/world-postgres';
process.env.WORKFLOW_LOCAL_BASE_URL ??= `http://127.0.0.1:${port}`;

const { getWorld } = await import('workflow/runtime');
const { start, getRun, resumeHook } = await import('workflow/api');
const flow = await import(pathToFileURL(path.join(here, '.well-known/workflow/v1/flow.mjs')).href);

const log = (obj) =>
  process.stdout.write(`${JSON.stringify({ t: new Date().toISOString(), ...obj })}\n`);

const world = await getWorld();
// `start()` asks the world for the ULID part of a new run id when it offers `createRunId`.
// beta.29's world has none (the runtime then uses a monotonic ULID, as here).
let nextRunUlid = null;
const original = world.createRunId?.bind(world);
const fallback = monotonicFactory();
world.createRunId = (opts) => {
  const chosen = nextRunUlid;
  nextRunUlid = null;
  return chosen ?? (original ? original(opts) : fallback());
};

// Flow deliveries per run: `started` when a request arrives, `answered` when it is answered
// (a delivery stuck in a replay loop stays started but never answered).
const stats = { started: {}, answered: {} };
const bump = (table, runId) => {
  table[runId ?? '-'] = (table[runId ?? '-'] ?? 0) + 1;
};

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function runInfo(runId) {
  const run = getRun(runId);
  const status = await run.status;
  const out = { runId, status };
  if (status === 'completed') out.returnValue = await run.returnValue;
  return out;
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, `http://127.0.0.1:${port}`);
    if (url.pathname === '/.well-known/workflow/v1/flow') {
      const body = await readBody(req);
      let runId = null;
      let stepId = null;
      try {
        ({ runId = null, stepId = null } = JSON.parse(body.toString()));
      } catch {}
      bump(stats.started, runId);
      log({ delivery: { runId, stepId } });
      if (process.env.JUDGE_FLOW_DOWN === '1') {
        // The flow route is down (a broken deployment): every delivery fails.
        bump(stats.answered, runId);
        log({ flow: { runId, stepId, status: 503, out: 'down' } });
        reply(res, 503, { error: 'flow route down (JUDGE_FLOW_DOWN=1)' });
        return;
      }
      const request = new Request(url, {
        method: req.method,
        headers: req.headers,
        body,
        duplex: 'half',
      });
      const response = await flow.POST(request);
      const out = Buffer.from(await response.arrayBuffer());
      bump(stats.answered, runId);
      log({ flow: { runId, stepId, status: response.status, out: out.toString().slice(0, 300) } });
      res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
      res.end(out);
    } else if (url.pathname === '/judge/stats') {
      reply(res, 200, stats);
    } else if (url.pathname === '/judge/run') {
      reply(res, 200, await runInfo(url.searchParams.get('runId')));
    } else if (url.pathname === '/judge/resume' && req.method === 'POST') {
      const { token, payload } = JSON.parse((await readBody(req)).toString());
      const hook = await resumeHook(token, payload);
      reply(res, 200, { runId: hook.runId, hookId: hook.hookId });
    } else if (url.pathname === '/judge/cancel' && req.method === 'POST') {
      const { runId } = JSON.parse((await readBody(req)).toString());
      await getRun(runId).cancel();
      reply(res, 200, { runId });
    } else if (url.pathname === '/judge/start' && req.method === 'POST') {
      const { workflowId, args, runUlid } = JSON.parse((await readBody(req)).toString());
      nextRunUlid = runUlid ?? null;
      const run = await start({ workflowId }, args ?? []);
      reply(res, 200, { runId: run.runId });
    } else {
      reply(res, 404, { error: 'not found' });
    }
  } catch (err) {
    log({ error: String(err?.stack ?? err) });
    if (!res.headersSent) reply(res, 500, { error: String(err) });
  }
});

await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
if (process.env.JUDGE_REENQUEUE === '0') {
  // Start the runner WITHOUT the startup recovery (re-enqueue of every active run), so that
  // only jobs already queued (e.g. a wake-up a repair enqueued) can drive a run.
  const list = world.runs.list;
  world.runs.list = async () => ({ data: [], hasMore: false, cursor: null });
  try {
    await world.start();
  } finally {
    world.runs.list = list;
  }
} else {
  await world.start();
}
log({ ready: true, port });

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  log({ stopping: true });
  setTimeout(() => process.exit(0), 3000).unref();
  server.close();
  server.closeAllConnections?.();
  await world.close?.().catch(() => {});
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

// Never outlive the test process that started us (JUDGE_PARENT_PID), even if it was killed.
const parent = Number(process.env.JUDGE_PARENT_PID || 0);
if (parent) {
  setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      stop();
    }
  }, 1000).unref();
}
