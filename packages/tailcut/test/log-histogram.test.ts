import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DelayEstimator } from '../src/delay/estimator.js';
import { bucketOf, LogHistogram } from '../src/delay/log-histogram.js';
import { codeOf, latencyOf } from '../src/delay/log-scale.js';
import { VirtualClock } from '../src/engine/index.js';
import { TailWindow } from '../src/engine/tail-window.js';
import { d2, d3, percentile, rng } from './support/random.js';

const PERCENTILES = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100];

function histogramOf(values: readonly number[]): LogHistogram {
  const h = new LogHistogram();
  for (const v of values) h.record(v);
  return h;
}

/** The largest relative error of the histogram's percentiles against the exact ones. */
function worstError(values: number[], read: (p: number) => number): number {
  let worst = 0;
  for (const p of PERCENTILES) {
    const exact = percentile(values, p);
    worst = Math.max(worst, Math.abs(read(p) / exact - 1));
  }
  return worst;
}

describe('log histogram: percentiles within 1% of the exact ones', () => {
  for (const [name, draw] of [
    ['D2', d2],
    ['D3', d3],
  ] as const) {
    it(`${name}: 200,000 latencies`, () => {
      const random = rng(11);
      const values = Array.from({ length: 200_000 }, () => draw(random));
      const h = histogramOf(values);
      const worst = worstError(values, (p) => h.valueAt(p));
      console.log(
        `${name}: worst relative error ${(worst * 100).toFixed(3)}% over p${PERCENTILES.join(', p')}; ${h.byteLength} bytes of counts`,
      );
      expect(worst).toBeLessThanOrEqual(0.01);
      expect(h.count).toBe(values.length);
      expect(h.max).toBe(values.reduce((a, b) => Math.max(a, b), 0));
    });

    it(`${name}: the delay estimator's percentile (its 2,048 codes) and the tail window's`, () => {
      const clock = new VirtualClock();
      const settings = {
        percentile: 95,
        initialDelayMs: 100,
        minDelayMs: 0.001,
        maxDelayMs: 3_600_000,
        windowMs: 30_000,
        minSamples: 20,
      };
      const random = rng(12);
      const values = Array.from({ length: 2048 }, () => draw(random));
      const tail = new TailWindow(30_000, clock, 50);
      let worst = 0;
      for (const p of [50, 90, 95, 99, 99.9]) {
        const e = new DelayEstimator({ ...settings, percentile: p }, clock);
        for (const v of values) e.record(v);
        worst = Math.max(worst, Math.abs(e.delayMs() / percentile(values, p) - 1));
      }
      for (const v of values) tail.record(v);
      const stats = tail.stats();
      const slow = values.filter((v) => v > 50).length / values.length;
      console.log(
        `${name}: estimator worst relative error ${(worst * 100).toFixed(3)}%; tail p99 ${stats.p99.toFixed(2)} (exact ${percentile(values, 99).toFixed(2)}), slow ${(stats.slowRate * 100).toFixed(2)}% (exact ${(slow * 100).toFixed(2)}%)`,
      );
      expect(worst).toBeLessThanOrEqual(0.001);
      for (const [p, read] of [
        [50, stats.p50],
        [95, stats.p95],
        [99, stats.p99],
        [99.9, stats.p999],
      ] as const) {
        expect(Math.abs(read / percentile(values, p) - 1)).toBeLessThanOrEqual(0.01);
      }
      expect(Math.abs(stats.slowRate - slow)).toBeLessThanOrEqual(0.01);
    });
  }

  it('reads codes back at or above the value, within 0.067%, and in order', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: 3_600_000, noNaN: true }), (ms) => {
        const back = latencyOf(codeOf(ms)) / ms - 1;
        expect(back).toBeGreaterThanOrEqual(-1e-12);
        expect(back).toBeLessThanOrEqual(0.00067);
      }),
    );
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 4_000_000, noNaN: true }),
        fc.double({ min: 0, max: 4_000_000, noNaN: true }),
        (a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(codeOf(lo)).toBeLessThanOrEqual(codeOf(hi));
          expect(bucketOf(lo)).toBeLessThanOrEqual(bucketOf(hi));
        },
      ),
    );
  });
});

describe('log histogram: properties', () => {
  const latencies = fc.array(fc.double({ min: 0, max: 4_000_000, noNaN: true }), {
    maxLength: 300,
  });

  it('merges exactly: a + b reads as the histogram of both', () => {
    fc.assert(
      fc.property(latencies, latencies, (a, b) => {
        const merged = histogramOf(a);
        merged.add(histogramOf(b));
        const both = histogramOf([...a, ...b]);
        expect(merged.count).toBe(both.count);
        expect(merged.max).toBe(both.max);
        for (const p of PERCENTILES) expect(merged.valueAt(p)).toBe(both.valueAt(p));
        for (const slo of [1, 20, 1000]) expect(merged.countAbove(slo)).toBe(both.countAbove(slo));
        expect(merged.mean).toBeCloseTo(both.mean, 6);
      }),
    );
  });

  it('is monotone: percentiles rise with p, and never fall when values are added', () => {
    fc.assert(
      fc.property(latencies, latencies, (a, more) => {
        const h = histogramOf(a);
        const before = PERCENTILES.map((p) => h.valueAt(p));
        for (let i = 1; i < before.length; i++) {
          expect(before[i] as number).toBeGreaterThanOrEqual(before[i - 1] as number);
        }
        // Adding values at least as large as every one recorded cannot lower a percentile.
        const top = Math.max(0, ...a);
        for (const v of more) h.record(top + v);
        PERCENTILES.forEach((p, i) => {
          expect(h.valueAt(p)).toBeGreaterThanOrEqual(before[i] as number);
        });
      }),
    );
  });

  it('keeps counts past 16 bits', () => {
    const h = new LogHistogram();
    for (let i = 0; i < 70_000; i++) h.record(10);
    h.record(20);
    expect(h.count).toBe(70_001);
    expect(h.countAbove(15)).toBe(1);
    expect(Math.abs(h.valueAt(50) / 10 - 1)).toBeLessThanOrEqual(0.01);
  });
});
