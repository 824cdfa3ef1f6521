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
    // The estimate over the second half of the run (after warm-up), read every 100 calls: the
    // guarantee is about the delay the calls get, not one reading of it.
    const readings: number[] = [];
    for (let t = (calls / 2) * 4; t < calls * 4; t += 400) {
      sim.clock.setTimeout(() => readings.push(sim.state.estimator.delayMs()), t + 1);
    }
    await sim.clock.runAll();
    const mean = readings.reduce((a, b) => a + b, 0) / readings.length;
    return {
      ratio: mean / percentile(population, p),
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

/**
 * The delay follows the fleet (virtual clock, 500 calls/s through the real engine, D2
 * latencies): after a shift ×3 up, back down, or a cold start, the delay is back within 20% of
 * the new steady p95 within 2 s, where a 30 s window of equal weights held it for 30 s.
 */
describe('delay that follows the fleet (virtual clock, 500 calls/s)', () => {
  const truth = (() => {
    const random = rng(3);
    return percentile(
      Array.from({ length: 200_000 }, () => d2(random)),
      95,
    );
  })();

  /** Runs `seconds` of calls whose latencies are D2 × `factor(t)`; returns the delay each 100 ms. */
  async function follow(
    factor: (ms: number) => number,
    seconds: number,
    percentileOption: number | 'auto' = 95,
  ) {
    const sim = simulation(
      { hedge: { percentile: percentileOption, initialDelayMs: 100, minSamples: 20 } },
      { ratio: 0.05, minPerSecond: 10 },
    );
    const random = rng(11);
    const delays: { at: number; delay: number }[] = [];
    for (let id = 0; id < seconds * 500; id++) {
      sim.clock.setTimeout(() => {
        const f = factor(sim.clock.now());
        const latencies = [d2(random) * f, d2(random) * f];
        void sim.call(id, (i) => ({ ms: latencies[i] ?? 0, result: 'ok' }));
      }, id * 2);
    }
    for (let t = 100; t <= seconds * 1000; t += 100) {
      sim.clock.setTimeout(() => delays.push({ at: t, delay: sim.state.estimator.delayMs() }), t);
    }
    await sim.clock.runAll();
    /** Time after `from` until the delay stays within 20% of `target` (checked to `to`). */
    const relearn = (from: number, to: number, target: number) => {
      const window = delays.filter((d) => d.at > from && d.at <= to);
      const last = window.findLastIndex((d) => Math.abs(d.delay / target - 1) > 0.2);
      return last === window.length - 1
        ? Number.POSITIVE_INFINITY
        : (window[last + 1]?.at ?? from) - from;
    };
    return { delays, relearn };
  }

  it('re-learns within 2 s after the fleet slows ×3 and after it comes back', async () => {
    const { relearn } = await follow((t) => (t >= 10_000 && t < 20_000 ? 3 : 1), 30);
    const up = relearn(10_000, 20_000, truth * 3);
    const down = relearn(20_000, 30_000, truth);
    console.log(`re-learn after ×3 up: ${up} ms, after back down: ${down} ms (500 calls/s)`);
    expect(up).toBeLessThanOrEqual(2000);
    expect(down).toBeLessThanOrEqual(2000);
  });

  it("percentile: 'auto' follows the same shifts as fast (D2, where it sits at p95)", async () => {
    const { relearn } = await follow((t) => (t >= 10_000 && t < 20_000 ? 3 : 1), 30, 'auto');
    const up = relearn(10_000, 20_000, truth * 3);
    const down = relearn(20_000, 30_000, truth);
    console.log(`auto: re-learn after ×3 up: ${up} ms, after back down: ${down} ms`);
    expect(up).toBeLessThanOrEqual(2000);
    expect(down).toBeLessThanOrEqual(2000);
  });

  it('forgets a cold start (2 s at ×8) within 2 s of its end', async () => {
    const { relearn } = await follow((t) => (t < 2000 ? 8 : 1), 12);
    const after = relearn(2000, 12_000, truth);
    console.log(`re-learn after a 2 s cold start at ×8: ${after} ms`);
    expect(after).toBeLessThanOrEqual(2000);
  });
});

describe('a delay matched to the budget (virtual clock, 500 calls/s)', () => {
  it('rises to the percentile the budget pays for: refusals become rare, and it does not oscillate', async () => {
    const random = rng(5);
    const truth95 = percentile(
      Array.from({ length: 200_000 }, () => d2(random)),
      95,
    );
    // p80 asks for 20% of calls to be hedged; the budget pays for 5%.
    const sim = simulation(
      { hedge: { percentile: 80, initialDelayMs: 100, minSamples: 20 } },
      { ratio: 0.05, minPerSecond: 0 },
    );
    const calls = 20 * 500;
    const delays: number[] = [];
    for (let id = 0; id < calls; id++) {
      sim.clock.setTimeout(() => {
        const latencies = [d2(random), d2(random)];
        void sim.call(id, (i) => ({ ms: latencies[i] ?? 0, result: 'ok' }));
        if (id >= calls / 2 && id % 50 === 0) delays.push(sim.state.estimator.delayMs());
      }, id * 2);
    }
    await sim.clock.runAll();
    const { hedgesSent, hedgesDeniedBudget } = sim.state.counters;
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
    const cv = Math.sqrt(delays.reduce((a, d) => a + (d - mean) ** 2, 0) / delays.length) / mean;
    console.log(
      `p80 on a 5% budget: delay ${mean.toFixed(1)} ms (true p95 ${truth95.toFixed(1)}), CV ${cv.toFixed(3)}, hedged ${((hedgesSent / calls) * 100).toFixed(2)}%, refused ${hedgesDeniedBudget}`,
    );
    expect(Math.abs(mean / truth95 - 1)).toBeLessThan(0.15);
    expect(cv).toBeLessThan(0.1);
    expect(hedgesSent / calls).toBeLessThanOrEqual(0.055);
    expect(hedgesDeniedBudget).toBeLessThan(0.2 * hedgesSent);
  });
});
