// Workflows the judge tests drive with the real runtime (compiled by `wf build`).
// Each returns a value the tests check, so a repaired run must really finish its code.
import { createHook, sleep } from "workflow";

async function add(a: number, b: number): Promise<number> {
  "use step";
  return a + b;
}

// WF112: step, a short sleep, step.
export async function sleeper(x: number) {
  "use workflow";
  const a = await add(x, 1);
  await sleep("1s");
  const b = await add(a, 10);
  return { a, b };
}

// WF101: a fan-out wider than the inline slice (MAX_INLINE_STEPS, default 3), so the
// last branch is created by an explicit step_created (row insert, then event insert).
export async function fanout(x: number) {
  "use workflow";
  const parts = await Promise.all([add(x, 1), add(x, 2), add(x, 3), add(x, 4)]);
  const total = await add(parts[0] + parts[1] + parts[2], parts[3]);
  return { parts, total };
}

// WF111: two steps in sequence.
export async function pair(x: number) {
  "use workflow";
  const a = await add(x, 1);
  const b = await add(a, 10);
  return { a, b };
}

// Repair placement: a step, then a hook the code creates only after the step returned. A
// restored step_completed must sort before that hook_created for a replay to consume it.
export async function approval(x: number) {
  "use workflow";
  const a = await add(x, 1);
  const hook = createHook<{ ok: boolean }>({ token: `approve-${x}` });
  const decision = await hook;
  const b = await add(a, 10);
  return { a, b, decision };
}
