import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { parseArgsMessage } from "../../src/cli/parseArgsMessage.ts";

function messageFor(args: string[]): string {
  try {
    parseArgs({ args, allowPositionals: true, options: { world: { type: "string", short: "w" } } });
  } catch (error) {
    return parseArgsMessage(error as Error);
  }
  throw new Error(`parseArgs accepted ${args.join(" ")}`);
}

describe("parseArgsMessage", () => {
  it("names the long flag and the = form when a value starts with a dash", () => {
    const says =
      "--world is followed by a value starting with a dash; write --world=VALUE if that is its value, or give --world a value";
    expect(messageFor(["--world", "-1"])).toBe(says);
    expect(messageFor(["-w", "-1"])).toBe(says);
  });

  it("names an unknown option without Node's advice about positionals", () => {
    expect(messageFor(["--nope"])).toBe("Unknown option '--nope'");
  });

  it("names a flag given no value as needing one", () => {
    expect(messageFor(["--world"])).toBe("--world needs a value");
    expect(messageFor(["-w"])).toBe("--world needs a value");
  });

  it("keeps any other error on one line", () => {
    let message = "";
    try {
      parseArgs({ args: ["--json=1"], options: { json: { type: "boolean" } } });
    } catch (error) {
      message = parseArgsMessage(error as Error);
    }
    expect(message).toBe("Option '--json' does not take an argument");
  });
});
