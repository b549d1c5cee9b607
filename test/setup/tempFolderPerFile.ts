/**
 * A temp folder of its own for each test file, and a check that the file leaves nothing
 * of baton's there. Before the file's tests load, `os.tmpdir()` becomes a new folder
 * (`TMPDIR`, which every process the tests start inherits); once the file's tests and hooks
 * have ended, a `baton-*` entry still in it fails the file, naming what was left, and the
 * folder goes with all it holds. A folder per file, not one per run, since the two files
 * that run side by side would see each other's entries, and so would the other suites and
 * programs that share the system's temp folder. The unit and property files share their
 * worker (vitest.config.ts): this file runs again before each of them, so the system's temp
 * folder is taken from the first run, kept in the environment, not from `os.tmpdir()`, which a
 * file whose `afterAll` did not run (`vitest list`) leaves pointing at its own folder.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const systemTemp = process.env.TMPDIR;
process.env.BATON_TEST_SYSTEM_TMPDIR ??= tmpdir();
const system = process.env.BATON_TEST_SYSTEM_TMPDIR;
const own = mkdtempSync(join(system, "baton-file-"));
// Open to every user, sticky, as /tmp is: some tests run a process as another user.
chmodSync(own, 0o1777);
// tsx's cache of transformed modules stays the system's, shared by every file's processes.
const tsxCache = `tsx-${userInfo().uid}`;
mkdirSync(join(system, tsxCache), { recursive: true });
symlinkSync(join(system, tsxCache), join(own, tsxCache));
process.env.TMPDIR = own;

afterAll(() => {
  if (systemTemp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = systemTemp;
  const left = readdirSync(own).filter((name) => name.startsWith("baton-"));
  rmSync(own, { recursive: true, force: true });
  if (left.length > 0) {
    throw new Error(
      `this file's tests left ${left.join(", ")} in the temp folder: remove what a test makes once it ends, passed or failed (tempDir() from test/fixtures/tempDir.ts, or onTestFinished)`,
    );
  }
});
