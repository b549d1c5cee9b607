import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shellLine, shellQuote } from "../../src/runtime/shellQuote.ts";

const SAMPLES = [
  "",
  "plain",
  "it's",
  "''",
  "a b\tc\nd",
  "$HOME `id` $(id) $\u007bPATH}",
  '"double" \\back\\slash',
  "glob * ? [a]",
  "; rm -rf / #",
  "-n",
  "ünïcødé ✓",
];

describe("shellQuote", () => {
  it("is read back by /bin/sh byte for byte", () => {
    for (const text of SAMPLES) {
      const result = spawnSync("/bin/sh", ["-c", `printf '%s' ${shellQuote(text)}`], {
        encoding: "utf8",
      });
      expect(result.stdout).toBe(text);
    }
  });

  it("keeps several quoted words apart", () => {
    const result = spawnSync(
      "/bin/sh",
      ["-c", `printf '<%s>' ${SAMPLES.map(shellQuote).join(" ")}`],
      {
        encoding: "utf8",
      },
    );
    expect(result.stdout).toBe(SAMPLES.map((text) => `<${text}>`).join(""));
  });

  it("refuses a NUL byte", () => {
    expect(() => shellQuote("a\0b")).toThrow(/NUL/);
  });
});

describe("shellLine", () => {
  it("is read back by /bin/sh word for word, quoting only the words that need it", () => {
    const argv = [...SAMPLES, "/usr/bin/python3", "--lr=0.1", "user@host:/a_b,c.py", "%+"];
    const line = shellLine(argv);
    const result = spawnSync("/bin/sh", ["-c", `printf '<%s>' ${line}`], { encoding: "utf8" });
    expect(result.stdout).toBe(argv.map((text) => `<${text}>`).join(""));
    // A command shown to copy reads as typed: `baton launch` printed "python3 -c import time; …".
    expect(shellLine(["python3", "-c", "import time; time.sleep(1)", "--lr=0.1"])).toBe(
      "python3 -c 'import time; time.sleep(1)' --lr=0.1",
    );
  });
});
