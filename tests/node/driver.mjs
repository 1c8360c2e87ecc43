// Test driver: writes through the REAL @workflow/world-postgres (5.0.0-beta.29) write path.
//
// Why: wfctl's doctor must recognise corruption exactly as production leaves it, so tests
// write rows with the package's own `world.events.create` / `world.queue` instead of SQL.
//
// Usage (from tests/realworld.py): cwd = the npm cache folder holding node_modules
// (conftest.install_real_package()), WORKFLOW_POSTGRES_URL set, a JSON array of operations
// on stdin. One JSON line per operation on stdout, each starting with `{"ok":` (graphile's
// logger may print other lines to stdout; callers skip them). Operations:
//   {"op":"create","runId":..,"event":{eventType, correlationId?, eventData?, specVersion?}}
//   {"op":"queue","queueName":"__wkf_workflow_<name>","message":{..},"opts":{..}?}
//   {"op":"sleep","ms":n}
// JSON `{"$bytes":"<base64>"}` becomes a Uint8Array (what the runtime sends; cbor-x stores it
// as tag 64) and `{"$date":"<iso>"}` a Date, recursively; results map them back.
// An operation error is reported ({"ok":false,...}) and the next operation runs. The world is
// never `start()`ed: that would re-enqueue every active run (reference §5.4).
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function revive(value) {
  if (Array.isArray(value)) return value.map(revive);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && typeof value.$bytes === 'string') {
      return new Uint8Array(Buffer.from(value.$bytes, 'base64'));
    }
    if (keys.length === 1 && typeof value.$date === 'string') {
      return new Date(value.$date);
    }
    return Object.fromEntries(keys.map((k) => [k, revive(value[k])]));
  }
  return value;
}

function jsonSafe(value, depth = 0) {
  if (value === undefined || typeof value === 'function') return undefined;
  if (value === null || typeof value !== 'object') {
    return typeof value === 'bigint' ? value.toString() : value;
  }
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') };
  if (value instanceof Date) return { $date: value.toISOString() };
  if (depth > 6) return '<deep>';
  if (Array.isArray(value)) return value.map((v) => jsonSafe(v, depth + 1));
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    const safe = jsonSafe(v, depth + 1);
    if (safe !== undefined) out[k] = safe;
  }
  return out;
}

function pick(entity, keys) {
  if (!entity || typeof entity !== 'object') return undefined;
  const out = {};
  for (const k of keys) if (entity[k] !== undefined) out[k] = entity[k];
  return jsonSafe(out);
}

function summarize(result) {
  if (!result || typeof result !== 'object') return jsonSafe(result);
  const out = {};
  if (result.event) {
    out.event = pick(result.event, [
      'eventId',
      'eventType',
      'correlationId',
      'runId',
      'specVersion',
      'createdAt',
      'eventData',
    ]);
  }
  if (result.run) out.run = pick(result.run, ['runId', 'status', 'specVersion']);
  if (result.step) out.step = pick(result.step, ['stepId', 'status', 'attempt']);
  if (result.hook) out.hook = pick(result.hook, ['hookId', 'token']);
  if (result.wait) out.wait = pick(result.wait, ['waitId', 'status']);
  if (Array.isArray(result.events)) out.eventCount = result.events.length;
  if (result.stepCreated) out.stepCreated = true;
  if (result.messageId) out.messageId = result.messageId;
  return out;
}

function describeError(err) {
  const report = {
    ok: false,
    error: err?.constructor?.name || err?.name || typeof err,
    message: String(err?.message ?? err),
  };
  // drizzle wraps the pg error (e.g. a fault trigger's RAISE) in `cause`.
  const cause = err?.cause;
  if (cause && typeof cause === 'object') {
    report.cause = {
      error: cause.constructor?.name || cause.name,
      message: String(cause.message ?? cause),
      ...(cause.code ? { code: cause.code } : {}),
    };
  }
  if (err?.code) report.code = err.code;
  return report;
}

// world.queue() calls the queue's start(), which also starts a graphile runner that would
// claim our jobs and POST them to a workflow endpoint. Pointing the base URL at a closed
// loopback port makes the runner wait for that port instead; close() aborts the wait.
async function closedLoopbackPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main() {
  const ops = JSON.parse((await readStdin()) || '[]');
  const require = createRequire(path.join(process.cwd(), 'package.json'));
  const entry = require.resolve('@workflow/world-postgres');
  const { createWorld } = await import(pathToFileURL(entry).href);
  if (ops.some((o) => o.op === 'queue') && !process.env.WORKFLOW_LOCAL_BASE_URL) {
    process.env.WORKFLOW_LOCAL_BASE_URL = `http://127.0.0.1:${await closedLoopbackPort()}`;
  }
  const world = createWorld({
    connectionString: process.env.WORKFLOW_POSTGRES_URL,
    applicationManagedShutdown: true,
  });
  try {
    for (const op of ops) {
      try {
        if (op.op === 'create') {
          const result = await world.events.create(op.runId, revive(op.event));
          emit({ ok: true, result: summarize(result) });
        } else if (op.op === 'queue') {
          const result = await world.queue(op.queueName, revive(op.message), revive(op.opts));
          emit({ ok: true, result: summarize(result) });
        } else if (op.op === 'sleep') {
          await new Promise((r) => setTimeout(r, op.ms));
          emit({ ok: true, result: null });
        } else {
          emit({ ok: false, error: 'UnknownOperation', message: JSON.stringify(op.op) });
        }
      } catch (err) {
        emit(describeError(err));
      }
    }
  } finally {
    await world.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`driver: ${err?.stack ?? err}\n`);
    process.exit(2);
  },
);
