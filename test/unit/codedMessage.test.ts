import { expect, it } from "vitest";
import { codedMessage } from "../../src/cli/codedMessage.ts";

it("puts the code after a one-line message", () => {
  expect(codedMessage("--world must be a whole number", "CONFIG")).toBe(
    "--world must be a whole number [CONFIG]",
  );
});

it("puts the code at the end of the first line, before the colon that announces the rest, never after a quoted log's last line", () => {
  const message =
    "deployment failer: rank 2 exited with code 3. Last 2 lines of the log:\n  | rank 2 starting\n  | rank 2 fails";
  expect(codedMessage(message, "RANK_FAILED")).toBe(
    "deployment failer: rank 2 exited with code 3. Last 2 lines of the log [RANK_FAILED]:\n  | rank 2 starting\n  | rank 2 fails",
  );
});

it("puts the code after a first line that ends in no colon", () => {
  expect(codedMessage("cannot read the store.\nIts folder is gone.", "STORE")).toBe(
    "cannot read the store. [STORE]\nIts folder is gone.",
  );
});
