/** A node on the DFS path and how far its deps have been explored. */
interface Frame {
  readonly id: string;
  readonly deps: readonly string[];
  next: number;
}

/**
 * Finds one cycle in a dependency graph, or returns `undefined` if there is none. Edges go
 * from a node to each of its deps; the cycle is returned as the ids along it, the first
 * equal to the last (`[a, b, c, a]`: a depends on b, b on c, c on a; a self-dependency is
 * `[a, a]`). Deps for which `depsOf` returns `undefined` are not in the graph and are
 * ignored.
 *
 * Pure (no I/O), so machines can use it. The depth-first search is iterative: a chain of
 * 100,000 nodes does not grow the call stack. Each node and edge is visited once.
 *
 * @example
 * ```ts
 * const deps = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]]]);
 * findCycle(deps.keys(), (id) => deps.get(id)); // ["a", "b", "c", "a"]
 * ```
 */
export function findCycle(
  nodes: Iterable<string>,
  depsOf: (id: string) => readonly string[] | undefined,
): string[] | undefined {
  const done = new Set<string>();
  const onPath = new Map<string, number>();
  const path: Frame[] = [];
  const enter = (id: string, deps: readonly string[]) => {
    onPath.set(id, path.length);
    path.push({ id, deps, next: 0 });
  };
  for (const start of nodes) {
    if (done.has(start)) continue;
    enter(start, depsOf(start) ?? []);
    while (path.length > 0) {
      const frame = path[path.length - 1]!;
      if (frame.next === frame.deps.length) {
        path.pop();
        onPath.delete(frame.id);
        done.add(frame.id);
        continue;
      }
      const dep = frame.deps[frame.next++]!;
      const at = onPath.get(dep);
      if (at !== undefined) return [...path.slice(at).map((f) => f.id), dep];
      if (done.has(dep)) continue;
      const deps = depsOf(dep);
      if (deps !== undefined) enter(dep, deps);
    }
  }
  return undefined;
}
