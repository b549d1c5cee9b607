/** The V8 flags the `baton` command runs with (bin/v8Flags.mjs). */
export declare const BATON_V8_FLAGS: readonly string[];
/** Sets `BATON_V8_FLAGS` in this process. */
export declare function setBatonV8Flags(): void;
