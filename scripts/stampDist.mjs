// The last step of `npm run build`: records in dist/ the digest of the src/ it was compiled
// from, which tells the `baton` command that dist/ is current (bin/distCurrent.mjs).
import { writeFileSync } from "node:fs";
import { DIGEST_FILE, sourcesDigest } from "../bin/distCurrent.mjs";

writeFileSync(new URL(`../dist/${DIGEST_FILE}`, import.meta.url), `${sourcesDigest()}\n`);
