import { readFileSync } from 'node:fs';
import * as hdr from 'hdr-histogram-js';
import { Hedger, VirtualClock, validateClientOptions } from 'tailcut/engine';
import { rng } from '../random.js';

/** Options of {@link simulateTrace}. */
export interface SimulateOptions {
  /** CSV file: one attempt latency in ms per line (the first numeric column is read). */
  trace: string;
  /** Hedge percentiles to try. */
  percentiles: number[];
  /** Budget ratios to try. */
  budgets: number[];
  /** Calls per second in the simulation (the budget's floor and window are per second). */
  rate: number;
  /** Calls simulated per configuration. Default: 20,000. */
  calls?: number;
}

/** Reads per-attempt latencies (ms) from a CSV, skipping headers and empty lines. */
export function readTrace(file: string): number[] {
  const out: number[] = [];
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const cell = line
      .split(',')
      .map((c) => Number(c.trim()))
      .find((v) => Number.isFinite(v) && v > 0);
    if (cell !== undefined) out.push(cell);
  }
  if (out.length === 0) throw new Error(`${file}: no latencies found (one number in ms per line)`);
  return out;
}

/** One configuration's result. */
export interface SimResult {
  percentile: number;
  budget: number;
  p99: number;
  p999: number;
  extraLoad: number;
}

/**
 * Replays recorded attempt latencies through tailcut's real engine under a virtual clock: each
 * attempt of each call draws a latency from the trace (seeded), calls arrive at `rate`, and the
 * engine hedges as it would in production, with the same HTTP policy and budget. Simulated time runs as fast as the CPU allows.
 */
export function simulate(
  latencies: number[],
  percentile: number,
  budget: number,
  rate: number,
  calls: number,
): SimResult {
  const clock = new VirtualClock();
  const hedger = new Hedger(
    validateClientOptions({
      routes: [
        {
          name: 'sim',
          hedge: { percentile, maxAttempts: 2, minSamples: 20, initialDelayMs: 1000 },
        },
      ],
      budget: { ratio: budget, minPerSecond: 0 },
      clock,
    }),
  );
  const route = hedger.routes[0] as (typeof hedger.routes)[number];
  const answer = { status: 200 };
  const random = rng(11);
  const draw = () => latencies[Math.floor(random() * latencies.length)] as number;
  const result = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  let attempts = 0;
  for (let i = 0; i < calls; i++) {
    clock.setTimeout(
      () => {
        const start = clock.now();
        const call = hedger.call({
          route,
          method: 'GET',
          origin: 'http://replica.sim',
          maxAttempts: 2,
          request: () => ({ method: 'GET', path: '/', headers: {}, text: () => undefined }),
          run(ctx, report) {
            attempts++;
            const timer = clock.setTimeout(() => report.commit(answer), draw());
            ctx.onCancel({ cancel: () => clock.clearTimeout(timer) });
          },
          discard: () => {},
        });
        call.start(() => {
          call.end(undefined, { status: 200 });
          result.recordValue(Math.max(1, Math.round((clock.now() - start) * 1000)));
        });
      },
      (i * 1000) / rate,
    );
  }
  clock.runAllSync();
  return {
    percentile,
    budget,
    p99: result.getValueAtPercentile(99) / 1000,
    p999: result.getValueAtPercentile(99.9) / 1000,
    extraLoad: attempts / calls - 1,
  };
}

/** Runs the grid of percentiles × budgets over a trace and renders a table. */
export function simulateTrace(o: SimulateOptions): string {
  const latencies = readTrace(o.trace);
  const calls = o.calls ?? 20_000;
  const sorted = [...latencies].sort((a, b) => a - b);
  const q = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
  const lines = [
    `trace: ${latencies.length} attempt latencies; unhedged p99 ${q(0.99).toFixed(1)} ms, p99.9 ${q(0.999).toFixed(1)} ms`,
    `${calls} calls per configuration at ${o.rate}/s, one hedge at most, budget floor 0`,
    '',
    `${'percentile'.padEnd(11)}${'budget'.padStart(8)}${'p99 ms'.padStart(10)}${'p99.9 ms'.padStart(10)}${'extra load'.padStart(12)}`,
  ];
  for (const p of o.percentiles) {
    for (const b of o.budgets) {
      const r = simulate(latencies, p, b, o.rate, calls);
      lines.push(
        `${`p${p}`.padEnd(11)}${`${(b * 100).toFixed(0)}%`.padStart(8)}${r.p99.toFixed(1).padStart(10)}${r.p999.toFixed(1).padStart(10)}${`${(r.extraLoad * 100).toFixed(1)}%`.padStart(12)}`,
      );
    }
  }
  return lines.join('\n');
}
