// Workflows the two-task corpus (tests/corpus/worlds4.py) drives with each release's runtime: one
// shape per state an operator's world holds (a hook, a long sleep, a failure, a step waiting
// for its retry). Each returns a value, so a repaired run must really finish its code.
import { createHook, FatalError, RetryableError, sleep } from "workflow";

async function inc(a: number, b: number): Promise<number> {
  "use step";
  return a + b;
}

async function explode(x: number): Promise<number> {
  "use step";
  throw new FatalError(`boom ${x}`);
}

async function retryLater(x: number): Promise<number> {
  "use step";
  throw new RetryableError(`not yet ${x}`, { retryAfter: "2h" });
}

// Two steps in sequence.
export async function pair(x: number) {
  "use workflow";
  const a = await inc(x, 1);
  const b = await inc(a, 10);
  return { a, b };
}

// Four steps at once, then one: a 5.0 core writes step_created explicitly for the steps past
// its inline ones (inline steps are created with their step_started, in one transaction).
export async function fanout(x: number) {
  "use workflow";
  const parts = await Promise.all([inc(x, 1), inc(x, 2), inc(x, 3), inc(x, 4)]);
  const total = await inc(parts[0] + parts[1] + parts[2], parts[3]);
  return { parts, total };
}

// step, sleep `seconds`, step: a sleeper whose wait can be torn or whose wake-up can be lost.
export async function nap(x: number, seconds: number) {
  "use workflow";
  const a = await inc(x, 1);
  await sleep(`${seconds}s`);
  const b = await inc(a, 10);
  return { a, b };
}

// A sleep of `days` days (a healthy long sleeper: one delayed wake-up job per world.start()).
export async function longSleep(x: number, days: number) {
  "use workflow";
  const a = await inc(x, 1);
  await sleep(`${days}d`);
  return { a };
}

// Waits on a hook with the given token, then adds the resumed payload's `n`.
export async function hooked(x: number, token: string) {
  "use workflow";
  const hook = createHook<{ n: number }>({ token });
  const payload = await hook;
  const total = await inc(x, payload.n);
  return { total };
}

// A step that fails for good: the run ends `failed`.
export async function doomed(x: number) {
  "use workflow";
  const a = await inc(x, 1);
  return await explode(a);
}

// A step that asks to be retried in 2 hours: the run stays `running` on that step.
export async function patient(x: number) {
  "use workflow";
  const a = await inc(x, 1);
  return await retryLater(a);
}
