// Test reader for payload VALUES: reads runs through the REAL @workflow/world-postgres
// `events.list` and hydrates every payload (run input, step inputs and results, hook payloads,
// run output) with the DevKit's own deserialisers (@workflow/core `serialization`: the
// devalue revivers its runtime uses), so a Python run's rich values are checked the way a
// Node process would read them.
//
// Usage (tests/runtime/test_values.py): cwd = the npm folder holding both packages
// (.cache/node-runtime), WORKFLOW_POSTGRES_URL set, a JSON array of run ids on stdin. One JSON
// line per run: {"ok":true,"runId",..,"payloads":[{eventType,field,value}]} where `value`
// describes the hydrated JS value: Uint8Array {"$bytes": base64}, Set {"$set": [...]},
// Map {"$map": [[k, v]]}, Date {"$date": iso}, bigint {"$bigint": text}; or {"ok":false,...}.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function describe(value, depth = 0) {
  if (value === undefined) return { $undefined: true };
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (value === null || typeof value !== 'object') return value;
  if (depth > 16) return '<deep>';
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') };
  if (value instanceof Date) return { $date: value.toISOString() };
  if (value instanceof Set) return { $set: [...value].map((v) => describe(v, depth + 1)) };
  if (value instanceof Map) {
    return { $map: [...value].map(([k, v]) => [describe(k, depth + 1), describe(v, depth + 1)]) };
  }
  if (value instanceof Error) return { $error: String(value.message) };
  if (Array.isArray(value)) return value.map((v) => describe(v, depth + 1));
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = describe(v, depth + 1);
  return out;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

const FIELDS = {
  run_created: ['input', 'args'],
  step_created: ['input', 'step'],
  step_completed: ['result', 'result'],
  hook_received: ['payload', 'result'],
  run_completed: ['output', 'output'],
};

async function main() {
  const runIds = JSON.parse((await readStdin()) || '[]');
  const require = createRequire(path.join(process.cwd(), 'package.json'));
  const { createWorld } = await import(pathToFileURL(require.resolve('@workflow/world-postgres')).href);
  const ser = await import(pathToFileURL(require.resolve('@workflow/core/serialization')).href);
  const world = createWorld({
    connectionString: process.env.WORKFLOW_POSTGRES_URL,
    applicationManagedShutdown: true,
  });
  try {
    for (const runId of runIds) {
      let stage = 'events.list';
      try {
        const page = await world.events.list({ runId, pagination: { limit: 1000 } });
        const payloads = [];
        for (const e of page.data) {
          const spec = FIELDS[e.eventType];
          if (!spec || !e.eventData || e.eventData[spec[0]] === undefined) continue;
          stage = `hydrate ${e.eventType}`;
          const raw = e.eventData[spec[0]];
          let value;
          if (spec[1] === 'args') value = await ser.hydrateWorkflowArguments(raw, runId, undefined);
          else if (spec[1] === 'step') value = await ser.hydrateStepArguments(raw, runId, undefined);
          else if (spec[1] === 'output') value = await ser.hydrateWorkflowReturnValue(raw, runId, undefined);
          else value = await ser.hydrateStepReturnValue(raw, runId, undefined);
          payloads.push({ eventType: e.eventType, field: spec[0], value: describe(value) });
        }
        process.stdout.write(`${JSON.stringify({ ok: true, runId, payloads })}\n`);
      } catch (err) {
        process.stdout.write(`${JSON.stringify({
          ok: false, runId, stage, message: String(err?.message ?? err).slice(0, 2000),
        })}\n`);
      }
    }
  } finally {
    await world.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`hydrate: ${err?.stack ?? err}\n`);
    process.exit(2);
  },
);
