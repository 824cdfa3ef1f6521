import type { Clock } from '../clock.js';
import { WindowHistogram } from '../delay/window-histogram.js';

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

/** A rolling window of a route's call durations, for the tail figures dashboards show. */
export class TailWindow {
  private readonly window: WindowHistogram;

  constructor(
    windowMs: number,
    private readonly clock: Clock,
    private readonly sloMs: number | undefined,
  ) {
    this.window = new WindowHistogram(windowMs, clock.now());
  }

  record(ms: number): void {
    this.window.record(ms * 1000, this.clock.now());
  }

  stats(): TailStats {
    const h = this.window.snapshot(this.clock.now());
    const count = h.totalCount;
    const at = (p: number) => h.getValueAtPercentile(p) / 1000;
    const p50 = at(50);
    const p99 = at(99);
    return {
      count,
      p50,
      p95: at(95),
      p99,
      p999: at(99.9),
      max: h.maxValue / 1000,
      cv: count > 0 && h.mean > 0 ? h.stdDeviation / h.mean : 0,
      tailAmplification: p50 > 0 ? p99 / p50 : 0,
      slowRate: this.slowRate(count),
    };
  }

  /** Share of values above the SLO: a binary search over percentiles (read rarely). */
  private slowRate(count: number): number {
    if (this.sloMs === undefined || count === 0) return 0;
    const h = this.window.snapshot(this.clock.now());
    const sloUs = this.sloMs * 1000;
    if (h.maxValue <= sloUs) return 0;
    let lo = 0;
    let hi = 100;
    for (let i = 0; i < 30; i++) {
      const mid = (lo + hi) / 2;
      if (h.getValueAtPercentile(mid) <= sloUs) lo = mid;
      else hi = mid;
    }
    return (100 - lo) / 100;
  }
}
