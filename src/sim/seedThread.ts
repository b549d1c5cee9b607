/**
 * The body of a thread `simulateSeeds` starts: it simulates each seed it is sent, with the
 * drawn simulation it was started with, and answers with the result (or with the error that
 * crashed the simulator), one message per seed.
 */
import { parentPort, workerData } from "node:worker_threads";
import { BatonError } from "../errors.ts";
import { type SeedThreadData, type SeedThreadMessage, simulateSeed } from "./simulateSeeds.ts";

const port = parentPort!;
const data = workerData as SeedThreadData;

port.on("message", async (seed: number) => {
  let message: SeedThreadMessage;
  try {
    message = { type: "result", result: await simulateSeed(seed, data) };
  } catch (error) {
    const crash = error instanceof Error ? error : new Error(String(error));
    const code = error instanceof BatonError ? error.code : undefined;
    message = { type: "error", seed, message: crash.message, stack: crash.stack, code };
  }
  port.postMessage(message);
});
