/**
 * The diagrams committed in ARCHITECTURE.md are the machines' own: this fails as soon as a
 * machine changes (or joins the catalog) until `npm run viz:docs` is run again.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { machineCatalog } from "../../src/machines/catalog.ts";
import {
  committedDocs,
  DOCS_BEGIN,
  DOCS_END,
  machineDocs,
  withMachineDocs,
} from "../../src/viz/machineDocs.ts";

describe("generated diagrams", () => {
  it("ARCHITECTURE.md shows every machine's current diagram (run `npm run viz:docs` if not)", () => {
    const architecture = readFileSync(new URL("../../ARCHITECTURE.md", import.meta.url), "utf8");
    expect(committedDocs(architecture)).toBe(machineDocs(machineCatalog));
  });

  it("replaces only what is between the markers", () => {
    const text = `# Title\n\nbefore\n${DOCS_BEGIN}\nold\n${DOCS_END}\nafter\n`;
    const docs = machineDocs({ connection: machineCatalog.connection });
    const updated = withMachineDocs(text, docs)!;
    expect(updated.startsWith("# Title\n\nbefore\n")).toBe(true);
    expect(updated.endsWith("\nafter\n")).toBe(true);
    expect(committedDocs(updated)).toBe(docs);
    expect(withMachineDocs("no markers here", docs)).toBeUndefined();
  });
});
