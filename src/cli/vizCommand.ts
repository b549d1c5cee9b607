import { readFile, writeFile } from "node:fs/promises";
import type { AnyStateMachine } from "xstate";
import { closestName } from "../closestName.ts";
import { ConfigError } from "../errors.ts";
import { machineCatalog } from "../machines/catalog.ts";
import { DOCS_BEGIN_PATTERN, DOCS_END, machineDocs, withMachineDocs } from "../viz/machineDocs.ts";
import { machineJson } from "../viz/machineJson.ts";
import { toMermaid } from "../viz/toMermaid.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";

export const VIZ_USAGE = `usage: ${commandCatalog.viz.usage}

Writes baton's state machines: one machine, or all of them
(${Object.keys(machineCatalog).join(", ")}).

  --format F         mermaid (a stateDiagram-v2; for all machines, markdown with one
                     diagram per machine) | json (the definition, as Stately's tools and
                     XState's createMachine read it; for all machines, an object by name)
                     (default: mermaid)
  --out FILE         write to FILE instead of stdout
  --update-docs FILE replace the diagrams between the viz markers in a markdown FILE
  -h, --help         this help`;

/**
 * `baton viz`: exports machine definitions as Mermaid or JSON, or refreshes the diagrams
 * in a markdown file. Returns the exit code.
 *
 * @example
 * ```ts
 * await vizCommand(["connection", "--format", "json", "--out", "connection.json"]);
 * ```
 */
export async function vizCommand(argv: string[]): Promise<number> {
  const { values, positionals, mistake } = parseFlags("viz", {
    args: argv,
    allowPositionals: true,
    options: commandCatalog.viz.flags,
  });
  if (values.help) return printHelp(VIZ_USAGE, mistake);
  emptyFlags("viz", values, ["out", "update-docs"]);
  const docsFile = values["update-docs"];
  if (docsFile !== undefined) {
    const other = [
      ...positionals.map((p) => `"${p}"`),
      ...(["format", "out"] as const).filter((f) => values[f] !== undefined).map((f) => `--${f}`),
    ];
    if (other.length > 0) {
      throw new ConfigError(
        `--update-docs writes every machine's Mermaid diagram into the file it names, so ${other.join(" and ")} would be ignored: leave ${other.length === 1 ? "it" : "them"} out, or leave out --update-docs`,
      );
    }
    const markdown = await readFile(docsFile, "utf8").catch((error: NodeJS.ErrnoException) => {
      // Reading a directory fails without naming it, so main cannot say which path it was.
      if (error.code !== "EISDIR") throw error;
      throw new ConfigError(
        `--update-docs: ${docsFile} is a directory; give the markdown file whose viz markers take the diagrams`,
      );
    });
    const updated = withMachineDocs(markdown, machineDocs(machineCatalog));
    if (updated === undefined) {
      throw new ConfigError(
        DOCS_BEGIN_PATTERN.test(markdown)
          ? `${docsFile} has a viz:begin marker but no "${DOCS_END}" line after it; add one where the diagrams end (everything between the two is replaced)`
          : `${docsFile} has no viz markers; add "<!-- viz:begin -->" and "${DOCS_END}" lines where the diagrams go`,
      );
    }
    await writeFile(docsFile, updated);
    return 0;
  }
  if (positionals.length > 1)
    throw new ConfigError(
      `give at most one machine, not ${positionals.length} (${positionals.join(", ")}) (baton viz --help lists the machines)`,
    );
  const name = positionals[0];
  if (name === "pool") {
    throw new ConfigError(
      `there is no machine "pool": a pool's scaling is decided by pure functions (src/machines/slurmScaling.ts, demand.ts, allocationState.ts), with no state of their own to draw; its workers' connections are the connection machine (baton viz connection). Choose one of ${Object.keys(machineCatalog).join(", ")}`,
    );
  }
  if (name !== undefined && !Object.hasOwn(machineCatalog, name)) {
    const meant = closestName(name, Object.keys(machineCatalog));
    throw new ConfigError(
      `there is no machine "${name}"${meant === undefined ? "" : ` (did you mean ${meant}?)`}; choose one of ${Object.keys(machineCatalog).join(", ")}`,
    );
  }
  const catalog: Readonly<Record<string, AnyStateMachine>> = machineCatalog;
  const machines = name === undefined ? catalog : { [name]: catalog[name]! };
  let text: string;
  if (choiceFlag("--format", values.format ?? "mermaid", ["mermaid", "json"]) === "json") {
    const json = Object.fromEntries(Object.entries(machines).map(([n, m]) => [n, machineJson(m)]));
    text = `${JSON.stringify(name === undefined ? json : json[name], null, 2)}\n`;
  } else {
    text = name === undefined ? `${machineDocs(machines)}\n` : toMermaid(machines[name]!);
  }
  if (values.out === undefined) process.stdout.write(text);
  else await writeFile(values.out, text);
  return 0;
}
