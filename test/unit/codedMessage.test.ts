import { expect, it } from "vitest";
import { codedMessage } from "../../src/cli/codedMessage.ts";

it("puts the code after a one-line message", () => {
  expect(codedMessage("--world must be a whole number", "CONFIG")).toBe(
    "--world must be a whole number [CONFIG]",
  );
});

it("puts the code at the end of the first line, never after a quoted log's last line", () => {
  const message =
    "deployment failer: rank 2 exited with code 3. Last 2 lines of the log:\n  | rank 2 starting\n  | rank 2 fails";
  expect(codedMessage(message, "RANK_FAILED")).toBe(
    "deployment failer: rank 2 exited with code 3. Last 2 lines of the log: [RANK_FAILED]\n  | rank 2 starting\n  | rank 2 fails",
  );
});
