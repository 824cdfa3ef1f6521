import { describe, expect, it } from 'vitest';
import { autoPercentile } from '../src/delay/auto-percentile.js';
import { d2, d3, percentile, rng } from './support/random.js';
import { simulation } from './support/sim.js';

/** What `'auto'` picks from `n` latencies drawn from `draw`, for 30 seeds. */
function picks(draw: (random: () => number) => number, n: number): number[] {
  return Array.from({ length: 30 }, (_, seed) => {
    const random = rng(seed + 1);
    const xs = Float64Array.from({ length: n }, () => draw(random)).sort();
    return autoPercentile(xs, n, new Float64Array(0), 0, 95);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe("percentile: 'auto' (the trade, on remembered latencies)", () => {
  it('D3 (99% ~10 ms, 1% ~1 s): rises to the edge of the fast mode, where hedges cost ≤ 1.5% of calls', () => {
    const chosen = picks(d3, 2048);
    expect(Math.min(...chosen)).toBeGreaterThanOrEqual(98);
    expect(median(chosen)).toBeGreaterThanOrEqual(98.5);
  });

  it('D2 (a wide body with stalls ×10): stays at p95 as a rule, where each hedge given up costs tail', () => {
    const chosen = picks(d2, 2048);
    expect(median(chosen)).toBe(95);
    expect(chosen.filter((p) => p > 97).length).toBeLessThanOrEqual(3);
  });

  it('reads censored values as still running: D3 with its stalls cancelled at ~25 ms still rises', () => {
    const random = rng(3);
    const values: number[] = [];
    const censored: number[] = [];
    for (let i = 0; i < 2048; i++) {
      const x = d3(random);
      // Under hedging a stall is cancelled when its hedge wins: seen only as "still running at 25 ms".
      if (x > 100) censored.push(25);
      values.push(Math.min(x, 25));
    }
    const sorted = Float64Array.from(values).sort();
    const open = Float64Array.from(censored).sort();
    const chosen = autoPercentile(sorted, sorted.length, open, open.length, 95);
    expect(chosen).toBeGreaterThanOrEqual(98);
    // It stays below the stalls: read as finished at 25 ms, they would look like part of the
    // fast mode and the delay would rise into them (p99.5, the cap).
    const delay = sorted[Math.ceil((chosen / 100) * sorted.length) - 1] as number;
    expect(delay).toBeLessThan(25);
    expect(autoPercentile(sorted, sorted.length, new Float64Array(0), 0, 95)).toBe(99.5);
  });

  it('stays at the base with fewer than 200 values', () => {
    const random = rng(9);
    const xs = Float64Array.from({ length: 199 }, () => d3(random)).sort();
    expect(autoPercentile(xs, xs.length, new Float64Array(0), 0, 95)).toBe(95);
  });
});

describe("percentile: 'auto' through the engine (virtual clock, 1,000 calls/s)", () => {
  /** 20 s of calls; returns the hedge rate and the calls' p99.9 over the last 10 s. */
  async function run(
    percentileOption: number | 'auto',
    draw: (random: () => number) => number,
    clamp: { minDelayMs?: number; maxDelayMs?: number } = {},
  ) {
    const sim = simulation(
      { hedge: { percentile: percentileOption, initialDelayMs: 20, minSamples: 50, ...clamp } },
      { ratio: 0.05, minPerSecond: 10 },
    );
    const random = rng(11);
    const calls = 20_000;
    const latencies: number[] = [];
    let hedgesBefore = 0;
    for (let id = 0; id < calls; id++) {
      sim.clock.setTimeout(() => {
        if (id === calls / 2) hedgesBefore = sim.state.counters.hedgesSent;
        const draws = [draw(random), draw(random)];
        const start = sim.clock.now();
        void sim
          .call(id, (i) => ({ ms: draws[i] ?? 0, result: 'ok' }))
          .then(() => {
            if (id >= calls / 2) latencies.push(sim.clock.now() - start);
          });
      }, id);
    }
    await sim.clock.runAll();
    const hedged = (sim.state.counters.hedgesSent - hedgesBefore) / (calls / 2);
    return {
      hedged,
      p999: percentile(latencies, 99.9),
      refused: sim.state.counters.hedgesDeniedBudget,
    };
  }

  it('D3: keeps the tail of p95 hedging within ~15% for a third of its hedges, with no refusals', async () => {
    const p95 = await run(95, d3);
    const auto = await run('auto', d3);
    const fixed = await run(95, d3, { minDelayMs: 20, maxDelayMs: 20 });
    console.log(
      `D3 p95: hedged ${(p95.hedged * 100).toFixed(2)}%, p99.9 ${p95.p999.toFixed(1)} ms, refused ${p95.refused}; auto: hedged ${(auto.hedged * 100).toFixed(2)}%, p99.9 ${auto.p999.toFixed(1)} ms, refused ${auto.refused}; fixed 20 ms: hedged ${(fixed.hedged * 100).toFixed(2)}%, p99.9 ${fixed.p999.toFixed(1)} ms`,
    );
    expect(auto.p999).toBeLessThanOrEqual(fixed.p999);
    expect(auto.hedged).toBeLessThanOrEqual(0.015);
    expect(auto.hedged).toBeLessThan(p95.hedged / 3);
    expect(auto.p999).toBeLessThanOrEqual(35);
    expect(auto.p999).toBeLessThanOrEqual(p95.p999 * 1.2);
    expect(auto.refused).toBe(0);
  });

  it('D2: hedges as p95 does, for the same tail', async () => {
    const p95 = await run(95, d2);
    const auto = await run('auto', d2);
    console.log(
      `D2 p95: hedged ${(p95.hedged * 100).toFixed(2)}%, p99.9 ${p95.p999.toFixed(1)} ms; auto: hedged ${(auto.hedged * 100).toFixed(2)}%, p99.9 ${auto.p999.toFixed(1)} ms`,
    );
    expect(auto.p999).toBeLessThanOrEqual(p95.p999 * 1.05);
    expect(auto.hedged).toBeGreaterThan(p95.hedged * 0.8);
  });
});
