/**
 * Latencies as 15-bit codes on a logarithmic scale over 1 µs..1 h: code 0 is below a
 * microsecond (read back as 0), codes 1..32767 are spaced by a factor of 1.00067, so a value
 * reads back at or above the one recorded, within 0.067%: rounded up, a delay read from them
 * never fires before a latency that was recorded (a call that took exactly the delay is not
 * hedged). The delay estimator keeps its memory in them (two bytes a latency).
 */

/** Lowest latency told apart from zero, ms (1 µs). */
export const LOWEST_MS = 0.001;
/** Highest latency tracked, ms (one hour: LLM calls can be long); higher ones are clamped. */
export const HIGHEST_MS = 3_600_000;
/** Highest code. */
export const MAX_CODE = 0x7fff;

/** ln of the factor between two neighbouring codes. */
const STEP = Math.log(HIGHEST_MS / LOWEST_MS) / (MAX_CODE - 1);

/** The code of a latency in ms (clamped to 1 µs..1 h; below 1 µs, and NaN, code 0). */
export function codeOf(ms: number): number {
  if (!(ms >= LOWEST_MS)) return 0;
  if (ms >= HIGHEST_MS) return MAX_CODE;
  // Up, less a hair for the rounding error of log(): a code's own latency keeps its code.
  return 1 + Math.ceil(Math.log(ms / LOWEST_MS) / STEP - 1e-9);
}

/** The latency (ms) a code stands for. */
export function latencyOf(code: number): number {
  return code === 0 ? 0 : LOWEST_MS * Math.exp((code - 1) * STEP);
}
