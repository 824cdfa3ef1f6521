import { describe, expect, it } from 'vitest';
import { DelayEstimator, type DelaySettings } from '../src/delay/estimator.js';
import { VirtualClock } from '../src/engine/index.js';
import { d2, percentile, rng } from './support/random.js';
import { simulation } from './support/sim.js';

const settings: DelaySettings = {
  percentile: 95,
  initialDelayMs: 100,
  minDelayMs: 1,
  maxDelayMs: 30_000,
  windowMs: 30_000,
  minSamples: 20,
};

describe('DelayEstimator', () => {
  it('uses initialDelayMs until minSamples, then the clamped percentile', () => {
    const clock = new VirtualClock();
    const e = new DelayEstimator(settings, clock);
    for (let i = 1; i <= 19; i++) e.record(i);
    expect(e.delayMs()).toBe(100);
    e.record(20);
    expect(e.delayMs()).toBeCloseTo(19, 0);
    const clamped = new DelayEstimator({ ...settings, minDelayMs: 50, minSamples: 1 }, clock);
    clamped.record(3);
    expect(clamped.delayMs()).toBe(50);
  });

  it('tracks latencies of ten minutes and more (long LLM calls)', () => {
    const clock = new VirtualClock();
    const e = new DelayEstimator({ ...settings, minSamples: 1, maxDelayMs: 3_600_000 }, clock);
    for (let i = 0; i < 100; i++) e.record(12 * 60_000);
    expect(e.delayMs()).toBeGreaterThan(11.9 * 60_000);
    expect(e.delayMs()).toBeLessThan(12.2 * 60_000);
  });

  it('forgets values older than the window', async () => {
    const clock = new VirtualClock();
    const e = new DelayEstimator({ ...settings, windowMs: 6000, minSamples: 1 }, clock);
    for (let i = 0; i < 100; i++) e.record(500);
    await clock.advance(3000);
    for (let i = 0; i < 100; i++) e.record(10);
    expect(e.samples()).toBe(200);
    await clock.advance(4000);
    expect(e.samples()).toBe(100);
    expect(e.delayMs()).toBeCloseTo(10, 0);
  });
});

/**
 * Hedging at full rate on a stationary D2 distribution (lognormal median 20 ms, sigma 0.4, 1%
 * stalls x10), the engine's estimate is compared with the true unhedged p95. A "winners only"
 * estimator, fed the same calls, drifts down: it sees the hedges' fast answers and never the
 * slow primaries they beat.
 */
describe('delay estimate under hedging (virtual clock)', () => {
  const calls = 12_000;
  const population = (() => {
    const random = rng(7);
    return Array.from({ length: 400_000 }, () => d2(random));
  })();

  async function run(mode: 'tailcut' | 'winners-only', p: number) {
    const hedge = { percentile: p, initialDelayMs: 40, minSamples: 200, windowMs: 60_000 };
    const sim = simulation({ hedge }, { ratio: 1, minPerSecond: 1000, maxConcurrentHedges: 1e6 });
    const random = rng(42);
    const naive = new DelayEstimator({ ...settings, ...hedge }, sim.clock);
    if (mode === 'winners-only') {
      Object.defineProperty(sim.state, 'estimator', {
        value: { delayMs: () => naive.delayMs(), record: () => {}, samples: () => naive.samples() },
      });
    }
    for (let id = 0; id < calls; id++) {
      sim.clock.setTimeout(() => {
        const latencies = [d2(random), d2(random)];
        sim
          .call(id, (i) => ({ ms: latencies[i] ?? 0, result: 'ok' }))
          .then((win) => {
            if (mode === 'winners-only') {
              const a = sim.attempts.find(
                (x) => x.call === id && x.ctx.index === win.attempt.index,
              );
              naive.record((a?.committedAt ?? 0) - (a?.startedAt ?? 0));
            }
          });
      }, id * 4);
    }
    await sim.clock.runAll();
    return {
      ratio: sim.state.estimator.delayMs() / percentile(population, p),
      hedged: sim.state.counters.hedgesSent / calls,
    };
  }

  for (const p of [95, 99]) {
    it(`p${p}: tailcut's estimate stays within 10% of the true unhedged value; winners-only drifts down`, async () => {
      const ours = await run('tailcut', p);
      const naive = await run('winners-only', p);
      expect(Math.abs(ours.ratio - 1)).toBeLessThan(0.1);
      expect(ours.hedged).toBeGreaterThan((100 - p) / 100 / 2);
      expect(ours.hedged).toBeLessThan(((100 - p) / 100) * 1.5);
      expect(naive.ratio).toBeLessThan(ours.ratio - 0.03);
      if (p === 99) {
        // Every stall is won by its hedge, so winners-only never sees one: the p99 collapses
        // towards the body's p99 and the hedge rate grows far past 1%.
        expect(naive.ratio).toBeLessThan(0.8);
        expect(naive.hedged).toBeGreaterThan(0.02);
      }
      console.log(
        `p${p}: tailcut ${ours.ratio.toFixed(3)}x truth, hedged ${(ours.hedged * 100).toFixed(2)}%; winners-only ${naive.ratio.toFixed(3)}x, hedged ${(naive.hedged * 100).toFixed(2)}%`,
      );
    });
  }
});
