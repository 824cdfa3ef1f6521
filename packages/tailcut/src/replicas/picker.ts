import type { Clock } from '../clock.js';

/** Weight of the newest latency in a replica's moving average. */
const EWMA_ALPHA = 0.2;
/** Longest time a Retry-After can keep a replica out of rotation. */
const MAX_HOLD_MS = 300_000;

/**
 * Chooses where each attempt of a route goes. Replicas are indices into the route's origin
 * list; with no list, every attempt goes to the request's own origin (index -1), and with one
 * replica every attempt goes to it: a load balancer behind one address spreads them.
 *
 * Health: a replica that answered 429/503 with Retry-After is left out of the primary and hedge
 * rotation until then (but when every candidate is held, the one free soonest is used: never
 * none); among untried replicas a hedge goes to the one with the lowest recent latency (a moving
 * average) weighted by its attempts in flight, so an outlier is the last choice.
 */
export class ReplicaPicker {
  readonly origins: readonly string[];
  private readonly inFlight: number[];
  private readonly heldUntil: number[];
  private readonly latency: number[];
  private next = 0;

  constructor(
    origins: readonly string[],
    private readonly clock: Clock,
  ) {
    this.origins = origins;
    this.inFlight = origins.map(() => 0);
    this.heldUntil = origins.map(() => 0);
    this.latency = origins.map(() => 0);
  }

  /** The primary attempt's replica: round robin over the replicas not held back. */
  primary(): number {
    const n = this.origins.length;
    if (n === 0) return -1;
    const now = this.clock.now();
    let fallback = this.next;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      if ((this.heldUntil[i] ?? 0) <= now) {
        this.next = (i + 1) % n;
        return i;
      }
      if ((this.heldUntil[i] ?? 0) < (this.heldUntil[fallback] ?? 0)) fallback = i;
    }
    this.next = (fallback + 1) % n;
    return fallback;
  }

  /**
   * A hedge's replica: among the untried ones not held back, the lowest recent latency times
   * (1 + attempts in flight); `undefined` when every replica of a multi-replica route has been
   * tried. With one replica or none, the same address.
   */
  hedge(tried: readonly number[]): number | undefined {
    const n = this.origins.length;
    if (n <= 1) return n - 1;
    const now = this.clock.now();
    let best: number | undefined;
    let bestScore = Number.POSITIVE_INFINITY;
    let held: number | undefined;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      if (tried.includes(i)) continue;
      if ((this.heldUntil[i] ?? 0) > now) {
        if (held === undefined || (this.heldUntil[i] ?? 0) < (this.heldUntil[held] ?? 0)) held = i;
        continue;
      }
      const score = ((this.latency[i] ?? 0) + 1) * (1 + (this.inFlight[i] ?? 0));
      if (score < bestScore) {
        best = i;
        bestScore = score;
      }
    }
    return best ?? held;
  }

  /** The origin of replica `index`, or `undefined` for the request's own origin. */
  origin(index: number): string | undefined {
    // A negative index on an array is a slow dictionary lookup: test it first.
    return index < 0 ? undefined : this.origins[index];
  }

  /** Counts an attempt starting on `index`. */
  begin(index: number): void {
    if (index >= 0) this.inFlight[index] = (this.inFlight[index] ?? 0) + 1;
  }

  /** Counts an attempt on `index` ending; `elapsedMs` feeds its moving average. */
  end(index: number, elapsedMs?: number): void {
    if (index < 0) return;
    this.inFlight[index] = (this.inFlight[index] ?? 1) - 1;
    if (elapsedMs !== undefined) {
      const prev = this.latency[index] ?? 0;
      this.latency[index] = prev === 0 ? elapsedMs : prev + EWMA_ALPHA * (elapsedMs - prev);
    }
  }

  /** Keeps replica `index` out of rotation for `ms` (a Retry-After), at most five minutes. */
  holdBack(index: number, ms: number): void {
    if (index < 0 || !(ms > 0)) return;
    this.heldUntil[index] = this.clock.now() + Math.min(ms, MAX_HOLD_MS);
  }

  /** True when replica `index` is held back now. */
  isHeld(index: number): boolean {
    return index >= 0 && (this.heldUntil[index] ?? 0) > this.clock.now();
  }
}

/** Reads a Retry-After header (delta seconds or an HTTP date) into milliseconds from `nowMs` (epoch). */
export function retryAfterMs(
  value: string | string[] | undefined,
  nowEpochMs = Date.now(),
): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowEpochMs);
}
