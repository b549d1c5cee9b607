// The V8 flags the `baton` command runs with, set before it loads anything else (and so in the
// worker processes it starts, and on its handler and seed threads, which share the process's
// V8). `--no-allocation-site-pretenuring`: V8 learns, per allocation site, to place objects
// straight in the old generation once most of a site's objects have survived a collection.
// XState's per-action arguments and the coordinator's per-event objects live long enough in a
// burst to trip that, and once pretenured, each dead one keeps what it points to alive through
// the next minor collections, so whole events were promoted (about 1 MB a minor collection in
// a coordinator). Without it, the machines do about 1.5 times the jobs a second (ARCHITECTURE.md,
// "Performance, measured"). A library cannot set its host's flags; an embedder can start Node
// with the same flag.
import { setFlagsFromString } from "node:v8";

/** The flags, in the order they are set. */
export const BATON_V8_FLAGS = ["--no-allocation-site-pretenuring"];

/** Sets {@link BATON_V8_FLAGS} in this process. */
export function setBatonV8Flags() {
  for (const flag of BATON_V8_FLAGS) setFlagsFromString(flag);
}
