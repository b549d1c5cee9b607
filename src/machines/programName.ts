import type { ProcInfo } from "../runtime/ports.ts";

/**
 * What a report of stopped processes calls one: its program (`argv[0]`), without its
 * arguments, which may hold what a log must not. A process whose arguments are gone by the
 * time they are read (it runs its exit, the kernel having released its memory, or it is a
 * zombie) is named by the kernel's name for its program (`name`, from the same read of its
 * stat), and why its arguments are gone: `python3, exiting`; `?` only where the table says
 * neither.
 *
 * @example
 * ```ts
 * programName({ argv: ["python3", "helper.py"], name: "python3", state: "running" }); // "python3"
 * programName({ argv: [], name: "python3", state: "running", exiting: true }); // "python3, exiting"
 * programName({ argv: [], name: "python3", state: "zombie" }); // "python3, exited"
 * ```
 */
export function programName({
  argv,
  name,
  state,
  exiting,
}: Pick<ProcInfo, "argv" | "name" | "state" | "exiting">): string {
  const program = argv[0];
  if (program !== undefined) return program;
  if (name === undefined) return "?";
  // A zombie's flags still say it runs its exit: it has run it.
  if (state === "zombie" || state === "dead") return `${name}, exited`;
  return exiting === true ? `${name}, exiting` : name;
}
