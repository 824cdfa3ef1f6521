import type { Clock } from '../clock.js';
import { WINDOW_SLICES, WindowHistogram } from './window-histogram.js';

/** The hedge-delay settings of a route (validated). */
export interface DelaySettings {
  percentile: number;
  initialDelayMs: number;
  minDelayMs: number;
  maxDelayMs: number;
  windowMs: number;
  minSamples: number;
}

/** How long a computed delay is reused before the window is read again. */
const REFRESH_MS = 10;

/**
 * Learns a route's hedge delay from recent attempt latencies:
 * `clamp(percentile of the window, minDelayMs, maxDelayMs)`, or `initialDelayMs` until the
 * window holds `minSamples` values.
 *
 * The engine records every attempt that reached the commit point, and every attempt that was
 * cancelled (lost the race) at its elapsed time, a censored lower bound. Without the censored
 * values the window would only see the fast attempts and the delay would drift down.
 */
export class DelayEstimator {
  private readonly settings: DelaySettings;
  private readonly clock: Clock;
  private readonly window: WindowHistogram;
  private cached: number;
  private computedAt = Number.NEGATIVE_INFINITY;
  private dirty = false;
  private warm = false;
  private readonly sliceMs: number;

  constructor(settings: DelaySettings, clock: Clock) {
    this.settings = settings;
    this.clock = clock;
    this.window = new WindowHistogram(settings.windowMs, clock.now());
    this.cached = settings.initialDelayMs;
    this.sliceMs = settings.windowMs / WINDOW_SLICES;
  }

  /** Records an attempt latency (or censored lower bound) in milliseconds. */
  record(elapsedMs: number): void {
    this.window.record(elapsedMs * 1000, this.clock.now());
    this.dirty = true;
  }

  /** The current hedge delay in milliseconds. */
  delayMs(): number {
    const now = this.clock.now();
    const age = now - this.computedAt;
    // Recompute when new values arrived (at most every REFRESH_MS once warm), or when a slice
    // may have rotated out of the window.
    const stale = this.dirty ? age >= REFRESH_MS || !this.warm : age >= this.sliceMs;
    if (!stale) return this.cached;
    this.computedAt = now;
    this.dirty = false;
    const s = this.settings;
    this.warm = this.window.count(now) >= s.minSamples;
    if (!this.warm) {
      this.cached = s.initialDelayMs;
    } else {
      const estimate = this.window.valueAtPercentile(s.percentile, now) / 1000;
      this.cached = Math.min(s.maxDelayMs, Math.max(s.minDelayMs, estimate));
    }
    return this.cached;
  }

  /** Values in the window now. */
  samples(): number {
    return this.window.count(this.clock.now());
  }
}
