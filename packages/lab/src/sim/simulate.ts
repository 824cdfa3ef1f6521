import * as hdr from 'hdr-histogram-js';
import { Hedger, VirtualClock, validateClientOptions } from 'tailcut/engine';
import { rng } from '../random.js';
import { readTrace, type TraceOptions } from './trace.js';

/** Options of {@link simulateTrace}. */
export interface SimulateOptions extends TraceOptions {
  /** The trace: CSV with a header, JSON lines or HAR (see {@link readTrace}). */
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

/**
 * The fewest recorded latencies a quantile q can rest on: about 10 beyond it, so 10 ÷ (1 − q)
 * (1,000 for p99, 10,000 for p99.9). With fewer, the simulator only resamples the trace's few
 * slowest values and its tail figures look precise without being so.
 */
export function samplesNeeded(q: number): number {
  return Math.ceil(10 / (1 - q) - 1e-6);
}

/** The quantile q of sorted values (nearest rank). */
function rank(sorted: number[], q: number): number {
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  ] as number;
}

const TOLERANCE = 0.02;

/**
 * The row to recommend: the lowest tail (p99.9 when the trace has the samples for it, else
 * p99); of the rows within 2% of it, the one with the least extra load.
 */
export function recommend(results: SimResult[], tail: 'p99' | 'p999'): SimResult | undefined {
  const best = Math.min(...results.map((r) => r[tail]));
  return results
    .filter((r) => r[tail] <= best * (1 + TOLERANCE))
    .sort((a, b) => a.extraLoad - b.extraLoad)[0];
}

const fixed = (v: number) => v.toFixed(1);
const share = (v: number) => `${(v * 100).toFixed(1)}%`;

/** One route's table, its sample-size warnings and its recommended row. */
function routeTable(latencies: number[], o: SimulateOptions, calls: number): string[] {
  const sorted = [...latencies].sort((a, b) => a - b);
  const n = sorted.length;
  const lines = [
    `${n} attempt latencies; unhedged p99 ${fixed(rank(sorted, 0.99))} ms, p99.9 ${fixed(rank(sorted, 0.999))} ms`,
  ];
  const shown = [...new Set([...o.percentiles.map((p) => p / 100), 0.99, 0.999])].sort(
    (a, b) => a - b,
  );
  for (const q of shown) {
    const need = samplesNeeded(q);
    if (n < need)
      lines.push(
        `warning: p${+(q * 100).toFixed(4)} rests on ${n} latencies; it needs at least ${need.toLocaleString('en-US')} (10 ÷ (1 − ${+q.toFixed(6)})) to be more than a resample of the slowest few`,
      );
  }
  lines.push(
    '',
    `${'percentile'.padEnd(11)}${'budget'.padStart(8)}${'p99 ms'.padStart(10)}${'p99.9 ms'.padStart(10)}${'extra load'.padStart(12)}`,
  );
  const results: SimResult[] = [];
  for (const p of o.percentiles)
    for (const b of o.budgets) results.push(simulate(latencies, p, b, o.rate, calls));
  const tail = n >= samplesNeeded(0.999) ? 'p999' : 'p99';
  const best = recommend(results, tail);
  for (const r of results)
    lines.push(
      `${`p${r.percentile}`.padEnd(11)}${share(r.budget).padStart(8)}${fixed(r.p99).padStart(10)}${fixed(r.p999).padStart(10)}${share(r.extraLoad).padStart(12)}${r === best ? '  <- recommended' : ''}`,
    );
  if (best)
    lines.push(
      '',
      `recommended: hedge at p${best.percentile} with a ${share(best.budget)} budget: p99 ${fixed(best.p99)} ms, p99.9 ${fixed(best.p999)} ms, ${share(best.extraLoad)} extra load`,
      `(the lowest ${tail === 'p999' ? 'p99.9' : 'p99'}; of the rows within ${TOLERANCE * 100}% of it, the one with the least extra load)`,
    );
  return lines;
}

/**
 * Runs the grid of percentiles × budgets over a trace, one table per route, and renders the
 * tables with their warnings and recommended rows. Throws a TraceError on an unreadable trace.
 */
export function simulateTrace(o: SimulateOptions): string {
  const trace = readTrace(o.trace, o);
  const calls = o.calls ?? 20_000;
  const lines = [
    `trace: ${o.trace} (${trace.format}, latency ${trace.format === 'har' ? 'per entry' : `column ${JSON.stringify(trace.column)}`})`,
    `${calls} calls per configuration at ${o.rate}/s, one hedge at most, budget floor 0`,
  ];
  for (const { route, latencies } of trace.routes) {
    lines.push('', route === undefined ? 'all calls:' : `route ${route}:`);
    lines.push(...routeTable(latencies, o, calls));
  }
  lines.push(
    '',
    'The budget is a cap, not a spend: a backup goes out only when a call runs past the hedge',
    'percentile (about 5% of calls at p95), and the budget only stops hedges beyond its ratio.',
  );
  return lines.join('\n');
}
