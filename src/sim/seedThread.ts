/**
 * The body of a thread `simulateSeeds` starts: it loads your modules (if any), then takes seeds
 * of the range it was handed one at a time, simulates each with the drawn simulation it was
 * started with, and answers with the result (or with the error that crashed the simulator), one
 * message per seed, then `done` when none is left.
 */
import { parentPort, workerData } from "node:worker_threads";
import { BatonError } from "../errors.ts";
import {
  type SeedThreadMessage,
  type SeedThreadStart,
  simulateSeed,
  yourModules,
} from "./inSeedOrder.ts";
import { SeedClaims } from "./seedClaims.ts";

const port = parentPort!;
const { seeds: range, ...data } = workerData as SeedThreadStart;
const seeds = new SeedClaims(range.first, range.last, range.memory);

// Loaded before the first seed is taken, so that a seed is taken only by a thread ready to run
// it; what stopped them loading is the answer to that seed, as it would have been.
const unloaded = await yourModules(data.simulation).then(
  () => undefined,
  (error: unknown) => ({ error }),
);

for (let seed = seeds.take(); seed !== undefined; seed = seeds.take()) {
  const message = await answer(seed);
  // After an error no seed is taken, on any thread: those before it run on, to find the first.
  if (message.type === "error") seeds.close();
  port.postMessage(message);
}
port.postMessage({ type: "done" } satisfies SeedThreadMessage);

async function answer(seed: number): Promise<SeedThreadMessage> {
  try {
    if (unloaded !== undefined) throw unloaded.error;
    return { type: "result", result: await simulateSeed(seed, data) };
  } catch (error) {
    const crash = error instanceof Error ? error : new Error(String(error));
    const code = error instanceof BatonError ? error.code : undefined;
    return { type: "error", seed, message: crash.message, stack: crash.stack, code };
  }
}
