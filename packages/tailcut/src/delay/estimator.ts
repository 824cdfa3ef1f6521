import type { Clock } from '../clock.js';
import { autoPercentile } from './auto-percentile.js';
import { codeOf, latencyOf } from './log-scale.js';
import { selectRank } from './select.js';

/** The hedge-delay settings of a route (validated). */
export interface DelaySettings {
  /** A number in (0, 100), or `'auto'`: from p95 up to where a hedge still pays for itself. */
  percentile: number | 'auto';
  initialDelayMs: number;
  minDelayMs: number;
  maxDelayMs: number;
  windowMs: number;
  minSamples: number;
}

/** Most latencies an estimator remembers (6 KiB): a p99 rests on 20 values above it. */
export const CAPACITY = 2048;

/** The top bit of a remembered code: the latency is a censored lower bound. */
const CENSORED = 0x8000;
/** Ticks a window is cut in: a latency's time is remembered to 1/256 of the window. */
const TICKS = 256;

/** Values above the percentile an estimate should rest on: fewer, and it is noise. */
const TAIL_VALUES = 25;

/** Room to select percentiles in: one for all estimators (the engine is single-threaded). */
const scratch = new Float64Array(CAPACITY);
const newest = new Float64Array(CAPACITY);
const censoredScratch = new Float64Array(CAPACITY);

/** The percentile `'auto'` starts from, and never goes below. */
const AUTO_BASE = 95;
/** How often `'auto'` weighs the trade again (a sort of the memory). */
const AUTO_REFRESH_MS = 250;

/** How far (in standard deviations) the newest values must disagree to count as a shift. */
const SHIFT_SIGMAS = 3;

/** How long a computed delay is reused before the memory is read again. */
const REFRESH_MS = 10;

/** Highest percentile the budget may push the delay to. */
const MAX_PERCENTILE = 99.9;

/**
 * Learns a route's hedge delay from recent attempt latencies:
 * `clamp(percentile of the newest latencies, minDelayMs, maxDelayMs)`, or `initialDelayMs`
 * until `minSamples` latencies are remembered.
 *
 * **Memory that fits the call rate.** The percentile is read from all the remembered latencies
 * within `windowMs` (a smooth estimate), unless the newest of them, the ones that put about 25
 * values above it (500 for a p95), disagree with it beyond chance (more than 3 standard
 * deviations in the count above it): the fleet shifted, and the percentile is read from those
 * newest alone. At 500 calls/s a p95 then rests on the last second, so a cold start, a deploy or a shift
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
  /**
   * The latencies, as codes of log-scale.ts (at or above, within 0.067%), with {@link CENSORED} set where
   * the value is a censored lower bound (a primary cancelled while running).
   */
  private readonly codes = new Uint16Array(CAPACITY);
  /** When each latency was recorded: its tick (the clock's time ÷ `tickMs`), modulo 256. */
  private readonly ticks = new Uint8Array(CAPACITY);
  private readonly tickMs: number;
  /** The tick of the newest latency. */
  private lastTick = Number.NEGATIVE_INFINITY;
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
  /** The configured percentile (95 for `'auto'`). */
  private readonly base: number;
  /**
   * For `'auto'`: the delay it last chose, in ms (0 for none). Held as a time rather than a
   * rank: the edge of a narrow fast mode stays put while the count of slow calls in memory
   * drifts, and a rank near that edge would fall into the gap behind it.
   */
  private autoFloorMs = 0;
  private autoAt = Number.NEGATIVE_INFINITY;

  constructor(settings: DelaySettings, clock: Clock) {
    this.settings = settings;
    this.clock = clock;
    this.cached = settings.initialDelayMs;
    this.base = settings.percentile === 'auto' ? AUTO_BASE : settings.percentile;
    this.cachedPercentile = this.base;
    this.expiryMs = Math.min(1000, settings.windowMs / 30);
    this.tickMs = settings.windowMs / TICKS;
  }

  /**
   * Records an attempt latency in milliseconds, or with `censored` a lower bound of it (the
   * attempt was cancelled or failed while still running).
   */
  record(elapsedMs: number, censored = false): void {
    const tick = Math.floor(this.clock.now() / this.tickMs);
    // A window or more since the newest: all are forgotten (so that ticks modulo 256 never
    // wrap between neighbours).
    if (tick - this.lastTick >= TICKS) this.size = 0;
    this.lastTick = tick;
    this.codes[this.head] = codeOf(elapsedMs) | (censored ? CENSORED : 0);
    this.ticks[this.head] = tick & (TICKS - 1);
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
    if (this.settings.percentile === 'auto' && now - this.autoAt >= AUTO_REFRESH_MS) {
      this.autoAt = now;
      const floor = this.chooseAuto(now);
      if (floor !== this.autoFloorMs) this.dirty = true;
      this.autoFloorMs = floor;
    }
    const percentile = this.percentileFor(this.affordable);
    const age = now - this.computedAt;
    // Recompute when new values arrived or the budget moved the percentile (at most every
    // REFRESH_MS once warm), or now and then so that old values expire.
    const changed = this.dirty || Math.abs(percentile - this.cachedPercentile) >= 0.1;
    const stale = changed ? age >= REFRESH_MS || !this.warm : age >= this.expiryMs;
    if (!stale) return this.cached;
    this.computedAt = now;
    this.dirty = false;
    this.cachedPercentile = percentile;
    const s = this.settings;
    const n = this.gather(now);
    this.warm = n >= s.minSamples;
    if (!this.warm) {
      this.used = n;
      this.cached = s.initialDelayMs;
    } else {
      const estimate = Math.max(this.autoFloorMs, this.estimate(n, percentile));
      this.cached = Math.min(s.maxDelayMs, Math.max(s.minDelayMs, estimate));
    }
    return this.cached;
  }

  /**
   * The percentile of the `n` values in `scratch` (newest first): of all of them (a smooth
   * estimate), unless the newest disagree with it beyond chance (the fleet shifted), then of the
   * newest alone (a fast one).
   */
  private estimate(n: number, percentile: number): number {
    const tail = 1 - percentile / 100;
    const short = Math.min(n, Math.max(this.settings.minSamples, Math.ceil(TAIL_VALUES / tail)));
    newest.set(scratch.subarray(0, short));
    const all = selectRank(scratch, n, rankOf(percentile, n));
    this.used = n;
    if (short === n) return all;
    let above = 0;
    for (let i = 0; i < short; i++) if ((newest[i] as number) > all) above++;
    const expected = short * tail;
    if (Math.abs(above - expected) <= SHIFT_SIGMAS * Math.sqrt(expected) + 1) return all;
    this.used = short;
    return selectRank(newest, short, rankOf(percentile, short));
  }

  /** Latencies the delay is read from now (the newest, within the window). */
  samples(): number {
    this.delayMs();
    return this.used;
  }

  /** The delay `'auto'` chooses from the memory now, ms (see auto-percentile.ts); 0 for none. */
  private chooseAuto(now: number): number {
    // The same memory the delay rests on: after a shift, the newest values alone.
    const all = this.gather(now);
    const n = this.used > 0 ? Math.min(all, this.used) : all;
    let m = 0;
    let i = this.head;
    for (let k = 0; k < n; k++) {
      i = (i + CAPACITY - 1) % CAPACITY;
      const code = this.codes[i] as number;
      if (code & CENSORED) censoredScratch[m++] = latencyOf(code & ~CENSORED);
    }
    scratch.subarray(0, n).sort();
    censoredScratch.subarray(0, m).sort();
    const p = autoPercentile(scratch, n, censoredScratch, m, AUTO_BASE);
    return p > AUTO_BASE ? (scratch[rankOf(p, n)] as number) : 0;
  }

  /** The configured percentile, or the higher one the budget can afford. */
  private percentileFor(affordable: number): number {
    const p = this.base;
    if (!(affordable < 1)) return p;
    return Math.min(MAX_PERCENTILE, Math.max(p, 100 * (1 - Math.max(0, affordable))));
  }

  /**
   * Copies the values recorded within the window (less than 256 ticks ago) into `scratch`,
   * newest first; returns how many.
   */
  private gather(now: number): number {
    let age = Math.floor(now / this.tickMs) - this.lastTick;
    let tick = this.lastTick & (TICKS - 1);
    let n = 0;
    let i = this.head;
    while (n < this.size) {
      i = (i + CAPACITY - 1) % CAPACITY;
      const t = this.ticks[i] as number;
      age += (tick - t) & (TICKS - 1);
      tick = t;
      if (age >= TICKS) break;
      scratch[n++] = latencyOf((this.codes[i] as number) & ~CENSORED);
    }
    return n;
  }
}

/** Nearest-rank index of `percentile` among `n` values. */
function rankOf(percentile: number, n: number): number {
  return Math.min(n - 1, Math.max(0, Math.ceil((percentile / 100) * n) - 1));
}
