/** The file in dist/ holding the digest of the sources it was compiled from (bin/distCurrent.mjs). */
export declare const DIGEST_FILE: string;
/** The file in dist/ noting what stat said of src/ when its digest was last found current. */
export declare const CHECKED_FILE: string;
/** The digest of every file under `root`/src: each relative path, its length, its bytes. */
export declare function sourcesDigest(root?: string): string;
/** What stat says of every file under `root`/src as one hash, and whether all have settled. */
export declare function sourcesStat(
  root?: string,
  now?: number,
): { stat: string; settled: boolean };
/** Whether `root`/dist is compiled from `root`/src as it is now. */
export declare function distIsCurrent(root?: string, now?: number): boolean;
