import type { Clock } from '../clock.js';
import { LogHistogram } from '../delay/log-histogram.js';

/** The seed metrics of a route's recent calls (end to end), in milliseconds where timed. */
export interface TailStats {
  /** Calls in the window. */
  count: number;
  p50: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
  /** Coefficient of variation: standard deviation ÷ mean. */
  cv: number;
  /** Tail amplification factor: p99 ÷ p50. */
  tailAmplification: number;
  /** Share of calls slower than the route's `sloMs` (0 when the route has none). */
  slowRate: number;
}

/**
 * A rolling window of a route's call durations, for the tail figures dashboards show: two
 * log histograms (percentiles within 1%), each of half the window, so the figures cover the
 * last half window to the whole of it. Rotation is lazy (on the clock readings): no timers.
 */
export class TailWindow {
  private readonly halfMs: number;
  private current = new LogHistogram();
  private previous = new LogHistogram();
  /** The half window `current` covers (the clock's time ÷ half). */
  private half: number;

  constructor(
    windowMs: number,
    private readonly clock: Clock,
    private readonly sloMs: number | undefined,
  ) {
    this.halfMs = windowMs / 2;
    this.half = Math.floor(clock.now() / this.halfMs);
  }

  record(ms: number): void {
    this.rotate();
    this.current.record(ms);
  }

  stats(): TailStats {
    this.rotate();
    const h = new LogHistogram();
    h.add(this.previous);
    h.add(this.current);
    const count = h.count;
    const p50 = h.valueAt(50);
    const p99 = h.valueAt(99);
    return {
      count,
      p50,
      p95: h.valueAt(95),
      p99,
      p999: h.valueAt(99.9),
      max: h.max,
      cv: count > 0 && h.mean > 0 ? h.stdDeviation / h.mean : 0,
      tailAmplification: p50 > 0 ? p99 / p50 : 0,
      slowRate: this.sloMs === undefined || count === 0 ? 0 : h.countAbove(this.sloMs) / count,
    };
  }

  private rotate(): void {
    const half = Math.floor(this.clock.now() / this.halfMs);
    if (half <= this.half) return;
    const old = this.previous;
    this.previous = this.current;
    this.current = old;
    this.current.clear();
    if (half - this.half > 1) this.previous.clear();
    this.half = half;
  }
}
