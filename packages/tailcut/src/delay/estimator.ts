import type { Clock } from '../clock.js';
import { selectRank } from './select.js';

/** The hedge-delay settings of a route (validated). */
export interface DelaySettings {
  percentile: number;
  initialDelayMs: number;
  minDelayMs: number;
  maxDelayMs: number;
  windowMs: number;
  minSamples: number;
}

/** Most latencies an estimator remembers (24 KiB): a p99 rests on 20 values above it. */
export const CAPACITY = 2048;

/** Values above the percentile an estimate should rest on: fewer, and it is noise. */
const TAIL_VALUES = 25;

/** Room to select a percentile in: one for all estimators (the engine is single-threaded). */
const scratch = new Float64Array(CAPACITY);

/** How long a computed delay is reused before the memory is read again. */
const REFRESH_MS = 10;

/** Highest percentile the budget may push the delay to. */
const MAX_PERCENTILE = 99.9;

/**
 * Learns a route's hedge delay from recent attempt latencies:
 * `clamp(percentile of the newest latencies, minDelayMs, maxDelayMs)`, or `initialDelayMs`
 * until `minSamples` latencies are remembered.
 *
 * **Memory that fits the call rate.** The percentile is read from the newest latencies that
 * together put about 25 values above it (500 for a p95, 2,048 for a p99), never older than
 * `windowMs`. At 500 calls/s a p95 rests on the last second, so a cold start, a deploy or a shift
 * of the fleet in either direction is forgotten within a second; at a few calls a second (LLM
 * routes) it rests on the whole window. A window of equally weighted slices (the previous
 * design) kept a 2-second transient in the delay for the whole 30 s.
 *
 * **What the budget can pay for.** Given the share of calls the budget can hedge, the
 * percentile rises to `100 × (1 − share)` when that is higher than the configured one: the
 * slowest calls get the hedges, instead of whichever came first in a second.
 *
 * The engine records primaries only: their latency at the commit point, or, when cancelled or
 * failed past the delay, their elapsed time (a censored lower bound that still ranks above the
 * delay); fast failures are not recorded. Without the censored values the memory would see only
 * the fast attempts and the delay would drift down.
 */
export class DelayEstimator {
  private readonly settings: DelaySettings;
  private readonly clock: Clock;
  private readonly values = new Float32Array(CAPACITY);
  private readonly times = new Float64Array(CAPACITY);
  /** Next slot to write. */
  private head = 0;
  private size = 0;
  private cached: number;
  private cachedPercentile: number;
  private used = 0;
  /** The share of calls the budget could hedge, when last told. */
  private affordable = Number.POSITIVE_INFINITY;
  private computedAt = Number.NEGATIVE_INFINITY;
  private dirty = false;
  private warm = false;
  /** How often the memory is read again without new values (so old ones expire). */
  private readonly expiryMs: number;

  constructor(settings: DelaySettings, clock: Clock) {
    this.settings = settings;
    this.clock = clock;
    this.cached = settings.initialDelayMs;
    this.cachedPercentile = settings.percentile;
    this.expiryMs = Math.min(1000, settings.windowMs / 30);
  }

  /** Records an attempt latency (or censored lower bound) in milliseconds. */
  record(elapsedMs: number): void {
    this.values[this.head] = elapsedMs;
    this.times[this.head] = this.clock.now();
    this.head = (this.head + 1) % CAPACITY;
    if (this.size < CAPACITY) this.size++;
    this.dirty = true;
  }

  /**
   * The current hedge delay in milliseconds. `affordable`, when given, is the share of calls the
   * budget can hedge now: the percentile rises to what it pays for. Without it, the last share
   * given is used.
   */
  delayMs(affordable?: number): number {
    if (affordable !== undefined) this.affordable = affordable;
    const now = this.clock.now();
    const percentile = this.percentileFor(this.affordable);
    const age = now - this.computedAt;
    // Recompute when new values arrived (at most every REFRESH_MS once warm), when the budget
    // moves the percentile, or now and then so that old values expire.
    const stale =
      Math.abs(percentile - this.cachedPercentile) >= 0.1 ||
      (this.dirty ? age >= REFRESH_MS || !this.warm : age >= this.expiryMs);
    if (!stale) return this.cached;
    this.computedAt = now;
    this.dirty = false;
    this.cachedPercentile = percentile;
    const s = this.settings;
    const n = this.gather(now, percentile);
    this.used = n;
    this.warm = n >= s.minSamples;
    if (!this.warm) {
      this.cached = s.initialDelayMs;
    } else {
      const rank = Math.min(n - 1, Math.max(0, Math.ceil((percentile / 100) * n) - 1));
      const estimate = selectRank(scratch, n, rank);
      this.cached = Math.min(s.maxDelayMs, Math.max(s.minDelayMs, estimate));
    }
    return this.cached;
  }

  /** Latencies the delay is read from now (the newest, within the window). */
  samples(): number {
    this.delayMs();
    return this.used;
  }

  /** The configured percentile, or the higher one the budget can afford. */
  private percentileFor(affordable: number): number {
    const p = this.settings.percentile;
    if (!(affordable < 1)) return p;
    return Math.min(MAX_PERCENTILE, Math.max(p, 100 * (1 - Math.max(0, affordable))));
  }

  /** Copies the newest values recorded within the window into `scratch`; returns how many. */
  private gather(now: number, percentile: number): number {
    const s = this.settings;
    const wanted = Math.min(
      CAPACITY,
      Math.max(s.minSamples, Math.ceil(TAIL_VALUES / (1 - percentile / 100))),
    );
    const since = now - s.windowMs;
    let n = 0;
    let i = this.head;
    while (n < wanted && n < this.size) {
      i = (i + CAPACITY - 1) % CAPACITY;
      if ((this.times[i] as number) < since) break;
      scratch[n++] = this.values[i] as number;
    }
    return n;
  }
}
