// A module-load hook for the 4.x judge runtime (tests/node/v4/server.mjs): lets the server fix
// the id of the next run it starts, so a fault trigger can name a run before it exists.
//
// Why a load hook: 4.x core mints the run id inside `start()` (`wrun_${ulid()}` from a
// module-private monotonic ULID factory) and its world offers no `createRunId`. The hook
// rewrites that one expression of @workflow/core's dist/runtime/start.js to ask
// `globalThis.__wfctlNextRunId()` first (same `wrun_<ULID>` form, nothing else changes), and
// fails loudly if the expression is not there (a core release that mints ids elsewhere), unless
// the core asks the world's `createRunId` (5.0 cores), which server.mjs wraps instead.
const TARGET = /@workflow\/core\/dist\/runtime\/start\.js$/;
const MINT = 'const runId = `wrun_${ulid()}`;';
const PATCHED = 'const runId = globalThis.__wfctlNextRunId?.() ?? `wrun_${ulid()}`;';

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (!TARGET.test(url)) return result;
  const source = String(result.source);
  if (!source.includes(MINT) && source.includes('world.createRunId')) {
    return result; // a 5.0 core: it asks the world (server.mjs wraps world.createRunId)
  }
  if (!source.includes(MINT)) {
    throw new Error(`runid-hook: ${url} does not mint run ids as ${MINT}`);
  }
  return { ...result, source: source.replace(MINT, PATCHED) };
}
