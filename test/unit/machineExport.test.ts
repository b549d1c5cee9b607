/**
 * The exporters: every catalog machine's JSON loads back into XState with the same states
 * and events, and its Mermaid diagram draws every state and every transition.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type AnyStateMachine,
  type AnyStateNode,
  and,
  createMachine,
  not,
  or,
  stateIn,
} from "xstate";
import { main } from "../../src/cli/main.ts";
import { vizCommand } from "../../src/cli/vizCommand.ts";
import { ConfigError } from "../../src/errors.ts";
import { machineCatalog } from "../../src/machines/catalog.ts";
import { machineJson } from "../../src/viz/machineJson.ts";
import { stateChart, transitionLabel } from "../../src/viz/stateChart.ts";
import { toMermaid } from "../../src/viz/toMermaid.ts";

/** Every state id under a node, from its resolved state nodes. */
function stateIds(node: AnyStateNode): string[] {
  return Object.values(node.states).flatMap((child) => [child.id, ...stateIds(child)]);
}

/** Every state id in a `machine.toJSON()` definition. */
function definitionIds(definition: { states?: Record<string, unknown> }): string[] {
  return Object.values(definition.states ?? {}).flatMap((child) => {
    const state = child as { id: string; states?: Record<string, unknown> };
    return [state.id, ...definitionIds(state)];
  });
}

/**
 * The Mermaid arrow and the JSON guards of a machine whose state `a` goes to `b` on `GO` by
 * each of `transitions`.
 */
function guardsOfGo(transitions: { guard: unknown; target: string }[]) {
  const machine = createMachine({
    id: "m",
    initial: "a",
    states: { a: { on: { GO: transitions } }, b: {} },
  } as Parameters<typeof createMachine>[0]);
  const json = machineJson(machine) as unknown as {
    states: { a: { on: { GO: { guard: unknown }[] } } };
  };
  return {
    arrow: toMermaid(machine)
      .split("\n")
      .find((line) => line.startsWith("  a --> b")),
    guards: json.states.a.on.GO.map((t) => t.guard),
  };
}

const machines = Object.entries(machineCatalog) as [string, AnyStateMachine][];

describe("machine JSON", () => {
  it.each(machines)(
    "%s loads back with createMachine, with the same states and events",
    (_, machine) => {
      const text = JSON.stringify(machineJson(machine));
      const loaded = createMachine(JSON.parse(text));

      expect(stateIds(loaded.root).sort()).toEqual(stateIds(machine.root).sort());
      expect([...loaded.root.events].sort()).toEqual([...machine.root.events].sort());
      // What XState's own toJSON reports agrees, for the original and for the loaded copy.
      expect(definitionIds(loaded.toJSON()).sort()).toEqual(definitionIds(machine.toJSON()).sort());
      expect(stateIds(machine.root).length).toBeGreaterThan(2);
    },
  );

  it("keeps guards and delays by name and leaves the context factory out", () => {
    const json = machineJson(machineCatalog.connection) as unknown as {
      context?: unknown;
      states: Record<string, { after?: Record<string, unknown>; on?: Record<string, unknown> }>;
    };
    expect(json.context).toBeUndefined();
    expect(Object.keys(json.states.handshaking?.after ?? {})).toEqual(["helloTimeout"]);
    expect(JSON.stringify(json.states.handshaking?.on?.HELLO)).toContain('"guard":"notAuthentic"');
  });
});

describe("Mermaid", () => {
  it.each(machines)("%s: every state and every transition is drawn", (_, machine) => {
    const text = toMermaid(machine);
    const lines = text.split("\n");
    expect(lines[0]).toBe("stateDiagram-v2");
    const chart = stateChart(machine);
    expect(lines).toContain(`  [*] --> ${chart.root.initial!.split(".").slice(1).join("_")}`);
    for (const id of stateIds(machine.root)) {
      const name = id.split(".").slice(1).join("_");
      expect(text).toMatch(new RegExp(`(^|\\s)${name}(\\s|$)`, "m"));
    }
    for (const t of chart.transitions) expect(text).toContain(transitionLabel(t));
  });

  it("draws nesting, parallel regions, final states, guards, delays and machine-wide transitions", () => {
    const machine = createMachine({
      id: "m",
      initial: "a",
      on: { RESET: ".a" },
      states: {
        a: { after: { 500: "b" }, on: { GO: { target: "b", guard: "ready" } } },
        b: {
          type: "parallel",
          states: {
            left: { initial: "x", states: { x: { on: { NEXT: "y" } }, y: {} } },
            right: { initial: "z", states: { z: {} } },
          },
          on: { DONE: "c" },
        },
        c: { type: "final" },
      },
    });
    const text = toMermaid(machine);
    expect(text).toContain("  a --> b : GO [ready], after 500 ms\n");
    expect(text).toContain("  state b {\n");
    expect(text).toMatch(
      /state "left" as b_left \{[\s\S]*\[\*\] --> b_left_x[\s\S]*\n {4}--\n {4}state "right" as b_right/,
    );
    expect(text).toContain('state "y" as b_left_y');
    expect(text).toContain("b_left_x --> b_left_y : NEXT");
    expect(text).toContain("  c --> [*]\n");
    expect(text).toContain("in every state: RESET goes to a");
  });

  it("writes XState's and, or, not and stateIn guards with what they combine, in Mermaid and JSON", () => {
    const { arrow, guards } = guardsOfGo([
      { guard: not("ready"), target: "b" },
      { guard: and([or(["x", "z"]), not({ type: "y", params: { n: 1 } })]), target: "b" },
      { guard: stateIn("#m.b"), target: "b" },
    ]);
    expect(arrow).toBe("  a --> b : GO [!ready], GO [(x || z) && !y], GO [in #35;m.b]");
    expect(guards).toEqual([
      { type: "not", guards: ["ready"] },
      {
        type: "and",
        guards: [
          { type: "or", guards: ["x", "z"] },
          { type: "not", guards: [{ type: "y", params: { n: 1 } }] },
        ],
      },
      { type: "stateIn", stateValue: "#m.b" },
    ]);
  });

  it("draws a guard written in place by what it returns, or as an inline guard: not as [guard]", () => {
    // JavaScript names a function written as the `guard` property `guard`: it was drawn
    // `GO [guard]`, as if the machine had a guard of that name.
    type Args = { context: { tries: number; log: string[] } };
    const { arrow, guards } = guardsOfGo([
      { guard: ({ context }: Args) => context.tries > 2, target: "b" },
      { guard: not(({ context }: Args) => context.tries === 0), target: "b" },
      {
        guard: ({ context }: Args) =>
          context.log.some((line) => line.startsWith("retrying after a long wait")),
        target: "b",
      },
      {
        guard: ({ context }: Args) => {
          return context.tries === 1;
        },
        target: "b",
      },
      {
        guard: function ready() {
          return true;
        },
        target: "b",
      },
    ]);
    expect(arrow).toBe(
      "  a --> b : GO [context.tries #62; 2], GO [!(context.tries === 0)], GO [inline guard], GO [inline guard], GO [ready]",
    );
    expect(guards).toEqual([
      { type: "context.tries > 2" },
      { type: "not", guards: [{ type: "context.tries === 0" }] },
      { type: "inline guard" },
      { type: "inline guard" },
      { type: "ready" },
    ]);
  });

  it("draws a parallel machine as a composite state, its regions and machine-wide transitions in it", () => {
    // Mermaid refused the regions' `--` at the top ("Parse error … got 'INVALID'"), and the
    // machine-wide transitions, noted on an initial state a parallel machine lacks, were lost.
    const machine = createMachine({
      id: "p",
      type: "parallel",
      on: { RESET: { actions: "clear" } },
      states: {
        left: { initial: "a", states: { a: { on: { GO: "b" } }, b: {} } },
        right: { initial: "c", states: { c: {} } },
      },
    });
    expect(toMermaid(machine)).toBe(
      [
        "stateDiagram-v2",
        "  [*] --> p",
        "  state p {",
        "    state left {",
        "      [*] --> left_a",
        '      state "a" as left_a',
        '      state "b" as left_b',
        "      left_a --> left_b : GO",
        "    }",
        "    --",
        "    state right {",
        "      [*] --> right_c",
        '      state "c" as right_c',
        "    }",
        "  }",
        "  note right of p",
        "    in every state: RESET",
        "  end note",
        "",
      ].join("\n"),
    );
  });

  it("names every state of any machine so that Mermaid parses it, and shows labels as they are", () => {
    // Each of these broke the diagram (mermaid 11: "Parse error … got 'COMPOSIT_STATE'"), or
    // drew what was not there: a state of its own id came out nameless, `x;y` drew `x` and a
    // state `;y`, `<b>` was read as HTML.
    const machine = createMachine({
      id: "my-machine",
      initial: "waiting for input",
      on: { "a;b": { actions: "log" } },
      states: {
        "waiting for input": {
          on: { "user:typed": "note", "x;y": "parsing-json", "<b>": "1st", "q#59;": "a_b" },
        },
        "parsing-json": { id: "custom", after: { 500: "state" } },
        note: { on: { GO: "#custom" } },
        state: {
          initial: "inner state",
          states: { "inner state": { on: { 'say "hi"': "#custom" } } },
        },
        "1st": { on: { "done -->x": "a-b" } },
        "a-b": {},
        a_b: { type: "final" },
      },
    });
    const text = toMermaid(machine);
    expect(text).toContain('  state "waiting for input" as waiting_for_input\n');
    expect(text).toContain('  state "parsing-json" as parsing_json\n');
    expect(text).toContain('  state "note" as note_\n');
    expect(text).toContain('  state "state" as state_ {\n');
    expect(text).toContain('    state "inner state" as state_inner_state\n');
    expect(text).toContain('  state "1st" as _1st\n');
    expect(text).toContain('  state "a-b" as a_b_2\n');
    expect(text).toContain("  a_b --> [*]\n");
    expect(text).toContain("  waiting_for_input --> parsing_json : x#59;y\n");
    expect(text).toContain("  waiting_for_input --> _1st : #60;b#62;\n");
    expect(text).toContain("  waiting_for_input --> a_b : q#35;59#59;\n");
    expect(text).toContain('  state_inner_state --> parsing_json : say "hi"\n');
    expect(text).toContain("  _1st --> a_b_2 : done --#62;x\n");
    expect(text).toContain("  parsing_json --> state_ : after 500 ms\n");
    expect(text).toContain("  note_ --> parsing_json : GO\n");
    expect(text).toContain("    in every state: a#59;b\n");
    // Every name an arrow uses is a plain Mermaid name, declared once.
    const arrowEnds = [...text.matchAll(/^ *(\S+) --> (\S+)(?: :|$)/gm)].flatMap((m) => [
      m[1],
      m[2],
    ]);
    for (const end of arrowEnds) expect(end).toMatch(/^(\[\*\]|[A-Za-z_][A-Za-z0-9_]*)$/);
    const declared = [...text.matchAll(/^ *state (?:"[^"]*" as )?(\S+)/gm)].map((m) => m[1]);
    expect(new Set(declared).size).toBe(declared.length);
  });
});

describe("the exporters from code", () => {
  it("take the name of one of baton's machines, as baton viz does", () => {
    expect(toMermaid("coordinator")).toBe(toMermaid(machineCatalog.coordinator));
    expect(machineJson("connection")).toEqual(machineJson(machineCatalog.connection));
  });

  it.each([
    ["conection", '"conection"'],
    [undefined, "undefined"],
    ["toString", '"toString"'],
  ])(
    "refuse %o, no machine and no name of one, with a ConfigError naming the machines",
    (bad, shown) => {
      // Each used to be a TypeError from inside: "Cannot read properties of undefined".
      for (const exporter of [toMermaid, machineJson] as ((machine: unknown) => unknown)[]) {
        expect(() => exporter(bad)).toThrow(ConfigError);
        expect(() => exporter(bad)).toThrow(
          `${exporter.name} takes a state machine or the name of one of baton's: coordinator, connection, group, rank, teardown, watchdog; not ${shown}`,
        );
      }
    },
  );
});

/** `baton viz ...args`'s exit code and what it wrote on stderr. */
async function vizSays(...args: string[]): Promise<{ code: number; stderr: string }> {
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    const code = await main(["viz", ...args]);
    return { code, stderr: stderr.mock.calls.map(([text]) => String(text)).join("") };
  } finally {
    stderr.mockRestore();
  }
}

describe("baton viz", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("writes one machine's JSON, and every machine's, to a file", async () => {
    dir = mkdtempSync(join(tmpdir(), "baton-viz-"));
    const one = join(dir, "connection.json");
    const all = join(dir, "all.json");
    expect(await main(["viz", "connection", "--format", "json", "--out", one])).toBe(0);
    expect(await main(["viz", "--format", "json", "--out", all])).toBe(0);

    expect(JSON.parse(readFileSync(one, "utf8"))).toEqual(machineJson(machineCatalog.connection));
    expect(Object.keys(JSON.parse(readFileSync(all, "utf8")))).toEqual(Object.keys(machineCatalog));
  });

  it("refuses an unknown machine and an unknown format", async () => {
    expect(await main(["viz", "nope"])).toBe(2);
    const typo = await vizSays("conection");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(
      'there is no machine "conection" (did you mean connection?); choose one of coordinator, connection,',
    );
    expect((await vizSays("Coordinator")).stderr).toContain("(did you mean coordinator?)");
    expect((await vizSays("nope")).stderr).not.toContain("did you mean");
    expect(await main(["viz", "connection", "--format", "svg"])).toBe(2);
    expect((await vizSays("connection", "--format", "jsn")).stderr).toContain(
      '--format must be one of mermaid, json, not "jsn"; did you mean json?',
    );
  });

  it("says why the pool, which DESIGN lists among the machines, has no chart", async () => {
    const pool = await vizSays("pool");
    expect(pool.code).toBe(2);
    expect(pool.stderr).toContain(
      'there is no machine "pool": a pool\'s scaling is decided by pure functions',
    );
    expect(pool.stderr).toContain("baton viz connection");
  });

  it("refuses a machine, --format or --out beside --update-docs, which would ignore them, and leaves the file alone", async () => {
    dir = mkdtempSync(join(tmpdir(), "baton-viz-"));
    const docs = join(dir, "docs.md");
    writeFileSync(docs, "<!-- viz:begin -->\n<!-- viz:end -->\n");
    for (const extra of [["connection"], ["--format", "json"], ["--out", join(dir, "x.md")]]) {
      expect(await main(["viz", ...extra, "--update-docs", docs])).toBe(2);
      expect(readFileSync(docs, "utf8")).toBe("<!-- viz:begin -->\n<!-- viz:end -->\n");
    }
    expect(await main(["viz", "--update-docs", docs])).toBe(0);
    expect(readFileSync(docs, "utf8")).toContain("stateDiagram-v2");
    // The marker names the command that wrote it, which a user has (not baton's npm script).
    expect(readFileSync(docs, "utf8")).toMatch(
      /^<!-- viz:begin \(generated by `baton viz --update-docs`; do not edit\) -->\n/,
    );
  });

  it("refuses an empty --out or --update-docs (an unset variable) instead of writing nowhere", async () => {
    for (const flag of ["--out", "--update-docs"]) {
      expect(await vizSays(flag, "")).toEqual({
        code: 2,
        stderr: `baton viz: ${flag} is empty: give it a value, or leave it out (baton viz --help says what it takes) [CONFIG]\n`,
      });
    }
  });

  it("says that --update-docs names a directory, in one line with exit 2", async () => {
    dir = mkdtempSync(join(tmpdir(), "baton-viz-"));
    expect(await vizSays("--update-docs", dir)).toEqual({
      code: 2,
      stderr: `baton viz: --update-docs: ${dir} is a directory; give the markdown file whose viz markers take the diagrams [CONFIG]\n`,
    });
  });

  it("says which viz marker a file lacks, and leaves it alone", async () => {
    dir = mkdtempSync(join(tmpdir(), "baton-viz-"));
    const docs = join(dir, "docs.md");
    const cases = [
      ["# notes\n", /docs\.md has no viz markers; add "<!-- viz:begin -->" and "<!-- viz:end -->"/],
      [
        "<!-- viz:begin -->\nold diagrams\n",
        /docs\.md has a viz:begin marker but no "<!-- viz:end -->" line after it/,
      ],
      [
        "<!-- viz:end -->\n<!-- viz:begin -->\n",
        /docs\.md has a viz:begin marker but no "<!-- viz:end -->" line after it/,
      ],
    ] as const;
    for (const [text, message] of cases) {
      writeFileSync(docs, text);
      const refused = vizCommand(["--update-docs", docs]);
      await expect(refused).rejects.toBeInstanceOf(ConfigError);
      await expect(refused).rejects.toThrow(message);
      expect(readFileSync(docs, "utf8")).toBe(text);
    }
  });
});
