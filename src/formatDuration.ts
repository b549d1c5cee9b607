/**
 * A duration as a person reads it, the one format every command of baton prints durations
 * in: "850 ms", "2.8 s", "12.3 s", "4 min 05 s", "2 h 03 min", "3 d 04 h". A negative one
 * (a clock that stepped back between two readings) reads "0 ms".
 *
 * @example
 * ```ts
 * formatDuration(2_794); // "2.8 s"
 * formatDuration(245_000); // "4 min 05 s"
 * ```
 */
export function formatDuration(ms: number): string {
  if (!(ms >= 0)) return "0 ms";
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 59.95) return `${s.toFixed(1)} s`;
  // Rounded before it is split, so that 119.6 s reads 2 min 00 s, not 1 min 60 s.
  const whole = Math.round(s);
  const m = Math.floor(whole / 60);
  if (m < 60) return `${m} min ${pad(whole % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${pad(m % 60)} min`;
  return `${Math.floor(h / 24)} d ${pad(h % 24)} h`;
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}
