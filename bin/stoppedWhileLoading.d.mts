/** The stop signals answered while `baton run` loads (bin/stoppedWhileLoading.mjs). */
export declare const LOADING_STOP_SIGNALS: readonly string[];
/** Answers a stop signal with one line and its exit code until the command listens for one. */
export declare function sayStoppedWhileLoading(): void;
