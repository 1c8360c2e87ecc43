// The runtime process of every two-task release: the REAL workflow runtime its users got on
// @workflow/world-postgres 4.1.1 ... 4.3.7 and 5.0.0-beta.27 (core 4.2.4 ... 4.8.9,
// 5.0.0-beta.35; tests/node4x/<version>) without a web framework. The counterpart of
// tests/node/runtime/server.mjs (beta.29, one task).
//
// A node:http server on 127.0.0.1:$PORT serves the two routes `wf build` compiled (4.x:
// CommonJS flow.js / step.js; 5.0 betas: ESM flow.mjs / step.mjs): the flow route (graphile
// task `workflow_flows`) and the step route (task `workflow_steps`: these releases run every
// step as its own queue job). `world.start()` starts the
// world's graphile runner, which delivers queue jobs to those routes, and re-enqueues every
// pending/running run, as any restarted worker does. Env: WORKFLOW_POSTGRES_URL, PORT;
// JUDGE_REENQUEUE=0 skips the startup re-enqueue, JUDGE_REENQUEUE_ONLY=<runId,..> limits it to
// those runs; JUDGE_FLOW_DOWN=1 answers every flow
// delivery 503 (a broken deployment).
//
// Test-only endpoints (loopback only), as in the beta.29 server:
//   POST /judge/start {workflowId, args, runUlid?}  start() a run; runUlid fixes its id
//        (through runid-hook.mjs: 4.x core mints the id itself)
//   GET  /judge/stats                               flow deliveries per run: started, answered
//   GET  /judge/run?runId=..                        status, and the hydrated return value
//   POST /judge/resume {token, payload}             resumeHook(token, payload)
//   POST /judge/cancel {runId}                      getRun(runId).cancel()
// JSON lines on stdout: {"delivery": ...} / {"flow": ...} for flow deliveries, {"step": ...}
// for step deliveries, {"ready": true} once up.
import fs from 'node:fs';
import http from 'node:http';
import { createRequire, register } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { monotonicFactory } from 'ulid';

register(pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), 'runid-hook.mjs')));

const port = Number(process.env.PORT);
const here = path.dirname(fileURLToPath(import.meta.url));
process.env.WORKFLOW_TARGET_WORLD ??= '@workflow/world-postgres';
process.env.WORKFLOW_LOCAL_BASE_URL ??= `http://127.0.0.1:${port}`;

let nextRunId = null;
globalThis.__wfctlNextRunId = () => {
  const chosen = nextRunId;
  nextRunId = null;
  return chosen;
};

const runtime = await import('workflow/runtime');
const { start, getRun, resumeHook } = await import('workflow/api');
const require = createRequire(import.meta.url);
const routes = path.join(here, '.well-known/workflow/v1');
// 4.x `wf build` emits CommonJS routes (flow.js, step.js); 5.0 betas emit ESM (flow.mjs, step.mjs).
const esm = fs.existsSync(path.join(routes, 'flow.mjs'));
const route = async (name) =>
  esm
    ? import(pathToFileURL(path.join(routes, `${name}.mjs`)).href)
    : require(path.join(routes, `${name}.js`));
const flow = await route('flow');
const step = await route('step');

const log = (obj) =>
  process.stdout.write(`${JSON.stringify({ t: new Date().toISOString(), ...obj })}\n`);

// 5.0.0-beta.35's core finds its world through a module a framework plugin aliases at build
// time (`@workflow/core/runtime/world-target`); without a framework, hand it the world its
// users configure (WORKFLOW_TARGET_WORLD), as that alias would. Older cores read the variable.
async function targetWorld() {
  try {
    return await runtime.getWorld();
  } catch (err) {
    if (!runtime.setWorld || !String(err).includes('statically injected')) throw err;
    const { createWorld } = await import(process.env.WORKFLOW_TARGET_WORLD);
    const made = await createWorld();
    runtime.setWorld(made);
    return made;
  }
}
const world = await targetWorld();
// 5.0 cores ask the world for the ULID part of a new run id when it offers `createRunId`
// (beta.27's world offers none), where 4.x cores mint it themselves (runid-hook.mjs).
const mintUlid = world.createRunId?.bind(world);
const fallbackUlid = monotonicFactory();
world.createRunId = (opts) => {
  const chosen = globalThis.__wfctlNextRunId();
  return chosen ? chosen.slice('wrun_'.length) : mintUlid ? mintUlid(opts) : fallbackUlid();
};

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

async function forward(route, url, req, body) {
  const request = new Request(url, { method: req.method, headers: req.headers, body, duplex: 'half' });
  const response = await route.POST(request);
  const out = Buffer.from(await response.arrayBuffer());
  return { response, out };
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, `http://127.0.0.1:${port}`);
    if (url.pathname === '/.well-known/workflow/v1/flow') {
      const body = await readBody(req);
      let runId = null;
      try {
        ({ runId = null } = JSON.parse(body.toString()));
      } catch {}
      bump(stats.started, runId);
      log({ delivery: { runId } });
      if (process.env.JUDGE_FLOW_DOWN === '1') {
        bump(stats.answered, runId);
        log({ flow: { runId, status: 503, out: 'down' } });
        reply(res, 503, { error: 'flow route down (JUDGE_FLOW_DOWN=1)' });
        return;
      }
      const { response, out } = await forward(flow, url, req, body);
      bump(stats.answered, runId);
      log({ flow: { runId, status: response.status, out: out.toString().slice(0, 300) } });
      res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
      res.end(out);
    } else if (url.pathname === '/.well-known/workflow/v1/step') {
      const body = await readBody(req);
      let info = {};
      try {
        const parsed = JSON.parse(body.toString());
        info = { runId: parsed.workflowRunId ?? null, stepId: parsed.stepId ?? null };
      } catch {}
      const { response, out } = await forward(step, url, req, body);
      log({ step: { ...info, status: response.status, out: out.toString().slice(0, 300) } });
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
      nextRunId = runUlid ? `wrun_${runUlid}` : null;
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
if (process.env.JUDGE_REENQUEUE_ONLY) {
  // The startup re-enqueue of a restarted worker, limited to the named runs (a restart that
  // piles one more wake-up onto a sleeper without re-driving the rest of the world).
  const only = new Set(process.env.JUDGE_REENQUEUE_ONLY.split(','));
  const list = world.runs.list;
  world.runs.list = async (params) => {
    const page = await list.call(world.runs, params);
    return { ...page, data: page.data.filter((run) => only.has(run.runId)) };
  };
  try {
    await world.start();
  } finally {
    world.runs.list = list;
  }
} else if (process.env.JUDGE_REENQUEUE === '0') {
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
