// Test reader: reads runs back through the REAL @workflow/world-postgres (5.0.0-beta.29) READ
// path -- `createWorld().runs.get`, `events.list`, `steps.list/get`, `hooks.list/get/getByToken`
// -- each of which validates rows with the package's zod schemas and decodes CBOR.
//
// Usage (from tests/runtime/test_realread.py): cwd = the npm cache folder holding node_modules
// (conftest.install_real_package()), WORKFLOW_POSTGRES_URL set, a JSON array of run ids on
// stdin. One JSON line per run on stdout, starting with `{"ok":` (other lines are skipped by
// the caller): {"ok":true,"runId",..,"run":{status,workflowName,input,output,error..},
// "events":[{eventId,eventType,correlationId,eventData}],"steps":[..],"hooks":[..]} or
// {"ok":false,"runId",..,"stage":"runs.get",...,"error","message"}. Byte payloads come back
// as {"$bytes": base64}, Dates as {"$date": iso}. The world is never `start()`ed.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function jsonSafe(value, depth = 0) {
  if (value === undefined || typeof value === 'function') return undefined;
  if (value === null || typeof value !== 'object') {
    return typeof value === 'bigint' ? value.toString() : value;
  }
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') };
  if (value instanceof Date) return { $date: value.toISOString() };
  if (value instanceof Error) return { $error: String(value.message) };
  if (depth > 8) return '<deep>';
  if (Array.isArray(value)) return value.map((v) => jsonSafe(v, depth + 1));
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    const safe = jsonSafe(v, depth + 1);
    if (safe !== undefined) out[k] = safe;
  }
  return out;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function readRun(world, runId) {
  let stage = 'runs.get';
  try {
    const run = await world.runs.get(runId);
    stage = 'events.list';
    const events = [];
    let cursor;
    for (;;) {
      const page = await world.events.list({ runId, pagination: { limit: 1000, cursor } });
      events.push(...page.data);
      if (!page.hasMore) break;
      cursor = page.cursor;
    }
    stage = 'steps.list';
    const steps = (await world.steps.list({ runId, pagination: { limit: 1000 } })).data;
    stage = 'steps.get';
    for (const s of steps) await world.steps.get(runId, s.stepId);
    stage = 'hooks.list';
    const hooks = (await world.hooks.list({ runId, pagination: { limit: 1000 } })).data;
    stage = 'hooks.get';
    for (const h of hooks) {
      await world.hooks.get(h.hookId);
      await world.hooks.getByToken(h.token);
    }
    return {
      ok: true,
      runId,
      run: jsonSafe(run),
      events: jsonSafe(events.map((e) => ({
        eventId: e.eventId, eventType: e.eventType, correlationId: e.correlationId,
        eventData: e.eventData,
      }))),
      steps: jsonSafe(steps),
      hooks: jsonSafe(hooks),
    };
  } catch (err) {
    return {
      ok: false, runId, stage,
      error: err?.constructor?.name || err?.name || typeof err,
      message: String(err?.message ?? err).slice(0, 2000),
    };
  }
}

async function main() {
  const runIds = JSON.parse((await readStdin()) || '[]');
  const require = createRequire(path.join(process.cwd(), 'package.json'));
  const entry = require.resolve('@workflow/world-postgres');
  const { createWorld } = await import(pathToFileURL(entry).href);
  const world = createWorld({
    connectionString: process.env.WORKFLOW_POSTGRES_URL,
    applicationManagedShutdown: true,
  });
  try {
    for (const runId of runIds) {
      process.stdout.write(`${JSON.stringify(await readRun(world, runId))}\n`);
    }
  } finally {
    await world.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`reader: ${err?.stack ?? err}\n`);
    process.exit(2);
  },
);
