// A healthy long sleeper for the WF131 test (tests/repair/test_real_hops.py), built apart from
// the judge's workflows so that changing it never rebuilds the shared runtime build.
import { sleep } from "workflow";

async function add(a: number, b: number): Promise<number> {
  "use step";
  return a + b;
}

// Six days asleep: continuations hop (WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS) to it.
export async function longSleep(x: number) {
  "use workflow";
  const a = await add(x, 1);
  await sleep("6d");
  return { a };
}
