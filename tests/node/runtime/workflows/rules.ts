// Workflows for the attribute and deadline rules (tests/repair/test_real_rules.py): each
// writes what the rule compares through the real runtime's own write path.
import { setAttributes, sleep } from "workflow";

async function inc(a: number, b: number): Promise<number> {
  "use step";
  return a + b;
}

// Two attribute writes (the second sets one key and deletes another), a step, a long sleep:
// the run stays parked, so a torn second write can be seen before anything else happens.
export async function tagged(x: number) {
  "use workflow";
  await setAttributes({ phase: "init", tmp: "x" });
  const a = await inc(x, 1);
  await setAttributes({ phase: "done", tmp: undefined });
  await sleep("1h");
  return { a };
}
