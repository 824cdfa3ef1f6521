import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// The fleet runs in child processes: use the compiled lab (built by `pnpm test` first).
import { runScenario } from '../dist/scenario.js';
import { D2 } from '../src/fleet/profile.js';
import { normal, rng } from '../src/random.js';
import { resample, simulate, simulateTrace } from '../src/sim/simulate.js';

describe('what-if simulator', () => {
  const random = rng(3);
  const latencies = Array.from({ length: 20_000 }, () => {
    const base = 20 * Math.exp(0.4 * normal(random));
    return random() < 0.01 ? base * 10 : base;
  });

  it('replays a trace through the engine: hedging at p95 cuts p99 for ~5% extra load', () => {
    const hedged = simulate(resample(latencies, 10_000), 95, 0.1, 100);
    const sorted = [...latencies].sort((a, b) => a - b);
    const unhedgedP99 = sorted[Math.ceil(0.99 * sorted.length) - 1] as number;
    expect(hedged.p99).toBeLessThan(unhedgedP99 * 0.8);
    expect(hedged.extraLoad).toBeGreaterThan(0.03);
    expect(hedged.extraLoad).toBeLessThan(0.08);
  });

  it('a smaller budget caps the extra load', () => {
    const r = simulate(resample(latencies, 10_000), 80, 0.02, 100);
    expect(r.extraLoad).toBeLessThanOrEqual(0.021);
  });

  it('reads a CSV trace and prints the grid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trace-'));
    const file = join(dir, 'latencies.csv');
    writeFileSync(file, `latency_ms\n${latencies.slice(0, 5000).join('\n')}\n`);
    const text = simulateTrace({
      trace: file,
      percentiles: [95],
      budgets: [0.05],
      rate: 100,
      calls: 2000,
    });
    expect(text).toContain('p95');
    expect(text).toContain('5%');
  });
});

describe('scenario on a real fleet (loopback, short)', () => {
  it('runs strategies side by side and accounts for the extra load at the replicas', async () => {
    const rows = await runScenario({
      profile: D2,
      replicas: 3,
      rate: 150,
      seconds: 2,
      warmupSeconds: 1,
      sloMs: 50,
      fixedDelayMs: 30,
      strategies: ['none', 'tailcut'],
    });
    expect(rows.map((r) => r.strategy)).toEqual(['no hedging', 'tailcut (p95, budget)']);
    const [bare, ours] = rows;
    expect(bare?.calls).toBeGreaterThan(200);
    expect(Math.abs(bare?.extraLoad ?? 1)).toBeLessThan(0.05);
    expect(ours?.extraLoad).toBeGreaterThan(0);
    expect(ours?.extraLoad).toBeLessThan(0.2);
    expect(ours?.theory).toHaveLength(4);
  });
});
