/** Characters a deployment id may hold; anything else bounds it inside an argument. */
const ID_CHAR = /[A-Za-z0-9_.-]/;

/**
 * Whether one argument names `deployment` as a whole word: `--deployment=dep-abc` and
 * `/run/dep-abc/rank-0.marker.json` do, `dep-abc2` and `dep-abc.log` do not.
 */
function namesDeployment(arg: string, deployment: string): boolean {
  for (let at = arg.indexOf(deployment); at !== -1; at = arg.indexOf(deployment, at + 1)) {
    const before = arg[at - 1];
    const after = arg[at + deployment.length];
    if (
      (before === undefined || !ID_CHAR.test(before)) &&
      (after === undefined || !ID_CHAR.test(after))
    ) {
      return true;
    }
  }
  return false;
}

/**
 * The rank-group contract's ownership test: a process *carries* a deployment when one of its
 * arguments names the deployment id (as a whole word, not as part of a longer id) or its
 * environment has `BATON_DEPLOYMENT=<deployment>`. Teardown's sweep and the reaper signal a
 * pid only when this holds right before signalling, so a pid reused by another program is
 * never touched.
 *
 * @example
 * ```ts
 * carriesDeployment(["python", "train.py"], { BATON_DEPLOYMENT: "dep-abc" }, "dep-abc"); // true
 * carriesDeployment(["sleep", "30"], undefined, "dep-abc"); // false
 * ```
 */
export function carriesDeployment(
  argv: readonly string[],
  env: Readonly<Record<string, string>> | undefined,
  deployment: string,
): boolean {
  return (
    env?.BATON_DEPLOYMENT === deployment || argv.some((arg) => namesDeployment(arg, deployment))
  );
}
