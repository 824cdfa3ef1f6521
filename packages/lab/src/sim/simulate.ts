import * as hdr from 'hdr-histogram-js';
import {
  aimedShare,
  type Clock,
  Hedger,
  VirtualClock,
  validateClientOptions,
} from 'tailcut/engine';
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
 * The calls a simulation replays: each call's primary and backup latency, drawn from the trace
 * (seeded). Every configuration replays the same calls, and the no-hedging row is their primaries.
 */
export interface SimCalls {
  primary: number[];
  backup: number[];
}

/** `calls` calls resampled from the trace, the same for the same trace and count. */
export function resample(latencies: number[], calls: number): SimCalls {
  const draws = (seed: number) => {
    const random = rng(seed);
    return Array.from(
      { length: calls },
      () => latencies[Math.floor(random() * latencies.length)] as number,
    );
  };
  return { primary: draws(11), backup: draws(12) };
}

/** A histogram of call latencies in ms, at µs resolution. */
function histogram() {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** The no-hedging row: the tail of the primaries alone. */
export function unhedgedTail(calls: SimCalls): Pick<SimResult, 'p99' | 'p999'> {
  const result = histogram();
  for (const ms of calls.primary) result.recordValue(Math.max(1, Math.round(ms * 1000)));
  return {
    p99: result.getValueAtPercentile(99) / 1000,
    p999: result.getValueAtPercentile(99.9) / 1000,
  };
}

/**
 * The percentile the delay sits at with a full budget: the one asked for, or the higher one at
 * which hedges spend about {@link aimedShare}'s share of the budget (80%), when the one asked
 * for would spend more. Above `percentile`, the budget and not the percentile set the delay.
 */
export function aimedPercentile(percentile: number, budget: number): number {
  return Math.max(percentile, 100 * (1 - aimedShare(budget, 1, budget)));
}

/**
 * Replays the calls through tailcut's real engine under a virtual clock: calls arrive at
 * `rate`, each attempt takes its drawn latency, and the engine hedges as it would in
 * production, with the same HTTP policy and budget. Simulated time runs as fast as the CPU
 * allows. A call that ends exactly at the delay is not hedged: the engine's timers fire a
 * nanosecond after the simulated replicas' at the same time.
 */
export function simulate(
  calls: SimCalls,
  percentile: number,
  budget: number,
  rate: number,
): SimResult {
  const clock = new VirtualClock();
  const engineClock: Clock = {
    now: () => clock.now(),
    setTimeout: (callback, ms) => clock.setTimeout(callback, ms + 1e-6),
    clearTimeout: (handle) => clock.clearTimeout(handle),
  };
  const hedger = new Hedger(
    validateClientOptions({
      routes: [
        {
          name: 'sim',
          hedge: { percentile, maxAttempts: 2, minSamples: 20, initialDelayMs: 1000 },
        },
      ],
      budget: { ratio: budget, minPerSecond: 0 },
      clock: engineClock,
    }),
  );
  const route = hedger.routes[0] as (typeof hedger.routes)[number];
  const answer = { status: 200 };
  const result = histogram();
  const n = calls.primary.length;
  let attempts = 0;
  for (let i = 0; i < n; i++) {
    const drawn = [calls.primary[i], calls.backup[i]] as number[];
    clock.setTimeout(
      () => {
        const start = clock.now();
        let launched = 0;
        const call = hedger.call({
          route,
          method: 'GET',
          origin: 'http://replica.sim',
          maxAttempts: 2,
          request: () => ({ method: 'GET', path: '/', headers: {}, text: () => undefined }),
          run(ctx, report) {
            attempts++;
            const ms = drawn[launched++] as number;
            const timer = clock.setTimeout(() => report.commit(answer), ms);
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
    extraLoad: attempts / n - 1,
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
 * p99); of the rows within 2% of it, the one with the least extra load. None when no row
 * lowers that tail by more than 2% below `baseline`, the same calls unhedged.
 */
export function recommend(
  results: SimResult[],
  tail: 'p99' | 'p999',
  baseline: Pick<SimResult, 'p99' | 'p999'>,
): SimResult | undefined {
  const best = Math.min(...results.map((r) => r[tail]));
  if (!(best < baseline[tail] * (1 - TOLERANCE))) return undefined;
  return results
    .filter((r) => r[tail] <= best * (1 + TOLERANCE))
    .sort((a, b) => a.extraLoad - b.extraLoad)[0];
}

const fixed = (v: number) => v.toFixed(1);
const share = (v: number) => `${(v * 100).toFixed(1)}%`;
const pct = (p: number) => `p${+p.toFixed(1)}`;

/** The percentile cell: `p80→p96` when the budget raised the delay to p96. */
function percentileCell(r: SimResult): string {
  const aimed = aimedPercentile(r.percentile, r.budget);
  return aimed > r.percentile ? `${pct(r.percentile)}→${pct(aimed)}` : pct(r.percentile);
}

/** One route's table, its sample-size warnings and its recommended row. */
function routeTable(latencies: number[], o: SimulateOptions, count: number): string[] {
  const sorted = [...latencies].sort((a, b) => a - b);
  const n = sorted.length;
  const lines = [
    `${n} attempt latencies; their p99 ${fixed(rank(sorted, 0.99))} ms, p99.9 ${fixed(rank(sorted, 0.999))} ms`,
  ];
  const shown = [...new Set([...o.percentiles.map((p) => p / 100), 0.99, 0.999])].sort(
    (a, b) => a - b,
  );
  for (const q of shown) {
    const need = samplesNeeded(q);
    if (n < need)
      lines.push(
        `warning: p${+(q * 100).toFixed(4)} rests on ${n} latencies; it needs at least ${need.toLocaleString('en-US')} (10 ÷ (1 − ${+q.toFixed(6)}))`,
        '  to be more than a resample of the slowest few',
      );
  }
  const row = (percentile: string, budget: string, p99: string, p999: string, extra: string) =>
    `${percentile.padEnd(14)}${budget.padStart(8)}${p99.padStart(10)}${p999.padStart(10)}${extra.padStart(12)}`;
  const calls = resample(latencies, count);
  const baseline = unhedgedTail(calls);
  lines.push(
    '',
    row('percentile', 'budget', 'p99 ms', 'p99.9 ms', 'extra load'),
    row('no hedging', '-', fixed(baseline.p99), fixed(baseline.p999), share(0)),
  );
  const results: SimResult[] = [];
  for (const p of o.percentiles)
    for (const b of o.budgets) results.push(simulate(calls, p, b, o.rate));
  const tail = n >= samplesNeeded(0.999) ? 'p999' : 'p99';
  const tailName = tail === 'p999' ? 'p99.9' : 'p99';
  const best = recommend(results, tail, baseline);
  for (const r of results)
    lines.push(
      `${row(percentileCell(r), share(r.budget), fixed(r.p99), fixed(r.p999), share(r.extraLoad))}${r === best ? '  <- recommended' : ''}`,
    );
  const limited = results.find((r) => aimedPercentile(r.percentile, r.budget) > r.percentile);
  if (limited)
    lines.push(
      '',
      `${percentileCell(limited)}: the budget, not the percentile, set the delay: tailcut raises the`,
      `delay until hedges spend about 80% of the budget (${pct(aimedPercentile(limited.percentile, limited.budget))} at a ${share(limited.budget)} budget), so`,
      'the percentile asked for does not matter in such rows.',
    );
  if (best)
    lines.push(
      '',
      `recommended: hedge at p${best.percentile} with a ${share(best.budget)} budget: p99 ${fixed(best.p99)} ms, p99.9 ${fixed(best.p999)} ms, ${share(best.extraLoad)} extra load`,
      `(against ${fixed(baseline[tail])} ms unhedged: the lowest ${tailName}; of the rows within ${TOLERANCE * 100}% of it,`,
      'the one with the least extra load)',
    );
  else
    lines.push(
      '',
      `hedging does not help on this trace: no row lowers the ${tailName} more than ${TOLERANCE * 100}% below no hedging`,
      `(${fixed(baseline[tail])} ms on the same calls).`,
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
    `${calls} calls resampled per route, the same for every row, at ${o.rate}/s; one hedge at most,`,
    'budget floor 0; "no hedging" is the same calls unhedged',
  ];
  if (trace.skipped > 0)
    lines.push(
      `skipped ${trace.skipped} HAR ${trace.skipped === 1 ? 'entry' : 'entries'} with no timing (never completed)`,
    );
  lines.push(...trace.warnings.map((w) => `warning: ${w}`));
  for (const { route, latencies } of trace.routes) {
    lines.push('', route === undefined ? 'all calls:' : `route ${route}:`);
    lines.push(...routeTable(latencies, o, calls));
  }
  lines.push(
    '',
    'The budget is a cap, not a spend: a backup goes out only when a call runs past the hedge',
    'delay (about 5% of calls at p95). When the percentile would hedge more than about 80% of',
    'the budget, tailcut raises the delay to spend that 80% instead (marked like p80→p96).',
  );
  return lines.join('\n');
}
