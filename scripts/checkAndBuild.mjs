// `npm test`'s first step: the type check, the lint and the build, side by side. Each is one
// process on one core (tsc does not use a second), and they ran one after the other: on CI's
// two cores the build's 20–30 s now pass while the type check runs. Each one's output is
// printed whole once it ends, in this order, so that their lines do not interleave; the step
// fails, naming what failed, if any of them does, after all have ended.
import { spawn } from "node:child_process";

const STEPS = ["typecheck", "lint", "build"];

const runs = STEPS.map(
  (step) =>
    new Promise((resolve) => {
      const child = spawn("npm", ["run", "-s", step], { stdio: ["ignore", "pipe", "pipe"] });
      const output = [];
      child.stdout.on("data", (chunk) => output.push(chunk));
      child.stderr.on("data", (chunk) => output.push(chunk));
      child.on("error", (error) => resolve({ step, code: 1, output: [`${error.message}\n`] }));
      child.on("close", (code, signal) => resolve({ step, code: code ?? signal, output }));
    }),
);

const failed = [];
for (const run of runs) {
  const { step, code, output } = await run;
  process.stdout.write(`> npm run ${step}\n`);
  for (const chunk of output) process.stdout.write(chunk);
  if (code !== 0) failed.push(`${step} (${code})`);
}
if (failed.length > 0) {
  process.stderr.write(`failed: ${failed.join(", ")}; fix it and run npm test again\n`);
  process.exitCode = 1;
}
