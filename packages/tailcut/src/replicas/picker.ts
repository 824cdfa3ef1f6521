import type { Clock } from '../clock.js';

/** What the picker needs of a replica. */
export interface PickerReplica {
  origin: string;
  /** Label in stats. */
  name: string;
  /** Never chosen as the primary. */
  hedgeOnly: boolean;
  /** Share of primaries, relative to the others. */
  weight: number;
}

/** One replica's figures since the client was created, as `stats()` reports them. */
export interface ReplicaStats {
  /** Attempts sent to it, primaries and hedges. */
  attempts: number;
  /** Attempts of its that won their call. */
  won: number;
  /** Attempts of its that failed (network error, retryable status). */
  failed: number;
  /** Attempts in flight now. */
  inFlight: number;
  /** Moving average of its recent attempt latencies, ms (0 before its first answer). */
  latencyMs: number;
  /** True while a Retry-After keeps it out of rotation. */
  heldBack: boolean;
}

/** Weight of the newest latency in a replica's moving average. */
const EWMA_ALPHA = 0.2;
/** Longest time a Retry-After can keep a replica out of rotation. */
const MAX_HOLD_MS = 300_000;

/**
 * Chooses where each attempt of a route goes. Replicas are indices into the route's replica
 * list; with no list, every attempt goes to the request's own origin (index -1), and with one
 * replica every attempt goes to it: a load balancer behind one address spreads them.
 *
 * Primaries go round robin, weighted (smooth weighted round robin, as nginx does: with equal
 * weights, plain round robin), over the replicas that are not `hedgeOnly`.
 *
 * Health: a replica that answered 429/503 with Retry-After is left out of the primary and hedge
 * rotation until then (but when every candidate is held, the one free soonest is used: never
 * none); among untried replicas a hedge goes to the one with the lowest recent latency (a moving
 * average) weighted by its attempts in flight, so an outlier is the last choice.
 */
export class ReplicaPicker {
  readonly origins: readonly string[];
  private readonly replicas: readonly PickerReplica[];
  private readonly inFlight: number[];
  private readonly heldUntil: number[];
  private readonly latency: number[];
  /** Smooth weighted round robin: each replica's running credit. */
  private readonly credit: number[];
  private readonly attempts: number[];
  private readonly won: number[];
  private readonly failed: number[];
  private next = 0;

  constructor(
    replicas: readonly PickerReplica[],
    private readonly clock: Clock,
  ) {
    this.replicas = replicas;
    this.origins = replicas.map((r) => r.origin);
    const zeros = () => replicas.map(() => 0);
    this.inFlight = zeros();
    this.heldUntil = zeros();
    this.latency = zeros();
    this.credit = zeros();
    this.attempts = zeros();
    this.won = zeros();
    this.failed = zeros();
  }

  /**
   * The primary attempt's replica: weighted round robin over the replicas that are not
   * `hedgeOnly` and not held back; when all of those are held, the one free soonest. `among`,
   * when given, narrows the choice to the replicas it accepts (a call that only some replicas
   * can take as it is).
   */
  primary(among?: (replica: number) => boolean): number {
    const n = this.origins.length;
    if (n === 0) return -1;
    const now = this.clock.now();
    let fallback = -1;
    let best = -1;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const r = this.replicas[i] as PickerReplica;
      if (r.hedgeOnly || (among !== undefined && !among(i))) continue;
      const held = this.heldUntil[i] ?? 0;
      if (held > now) {
        if (fallback < 0 || held < (this.heldUntil[fallback] ?? 0)) fallback = i;
        continue;
      }
      this.credit[i] = (this.credit[i] ?? 0) + r.weight;
      total += r.weight;
      if (best < 0 || (this.credit[i] ?? 0) > (this.credit[best] ?? 0)) best = i;
    }
    const chosen = best >= 0 ? best : fallback;
    if (best >= 0) this.credit[best] = (this.credit[best] ?? 0) - total;
    this.next = (chosen + 1) % n;
    return chosen;
  }

  /**
   * A hedge's replica: among the untried ones not held back, the lowest recent latency times
   * (1 + attempts in flight); `undefined` when every replica of a multi-replica route has been
   * tried. With one replica or none, the same address.
   */
  hedge(tried: { includes(replica: number): boolean }): number | undefined {
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
    if (index < 0) return;
    this.inFlight[index] = (this.inFlight[index] ?? 0) + 1;
    this.attempts[index] = (this.attempts[index] ?? 0) + 1;
  }

  /** Counts how an attempt on `index` ended: it won its call, or it failed. */
  outcome(index: number, outcome: 'won' | 'failed'): void {
    if (index < 0) return;
    const counts = outcome === 'won' ? this.won : this.failed;
    counts[index] = (counts[index] ?? 0) + 1;
  }

  /** Per replica name: attempts, wins, failures, in flight, recent latency, hold. */
  stats(): Record<string, ReplicaStats> {
    const out: Record<string, ReplicaStats> = Object.create(null);
    this.replicas.forEach((r, i) => {
      out[r.name] = {
        attempts: this.attempts[i] ?? 0,
        won: this.won[i] ?? 0,
        failed: this.failed[i] ?? 0,
        inFlight: this.inFlight[i] ?? 0,
        latencyMs: this.latency[i] ?? 0,
        heldBack: this.isHeld(i),
      };
    });
    return out;
  }

  /** The name of replica `index`, or `undefined` for the request's own origin. */
  name(index: number): string | undefined {
    return index < 0 ? undefined : this.replicas[index]?.name;
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
