import type * as hdr from 'hdr-histogram-js';
import type { FleetStats } from '../fleet/fleet.js';
import type { LoadResult } from '../load/open-loop.js';
import { quantile, type Theory } from '../theory.js';

/** The percentiles every report shows. */
export const PERCENTILES = [50, 90, 99, 99.9] as const;

/** One strategy's row: what was measured, and what theory says. */
export interface Row {
  strategy: string;
  /** Latency at PERCENTILES, ms. */
  measured: number[];
  theory?: number[] | undefined;
  maxMs: number;
  cv: number;
  tailAmplification: number;
  slowRate: number;
  /** Extra attempts per call (0.05 = 5%). */
  extraLoad: number;
  theoryExtraLoad?: number | undefined;
  abortedWorkMs: number;
  /** Median ms between a call's first answer and its losers' aborts at the replicas. */
  abortLagMs: number;
  cpuUsPerCall: number;
  calls: number;
  errors: number;
  sendLagP99Ms: number;
  invalid: boolean;
  /** The run's latency histogram (µs), for plots. */
  histogram: hdr.Histogram;
  theorySurvival?: ((t: number) => number) | undefined;
}

function slowShare(h: hdr.Histogram, sloMs: number): number {
  let lo = 0;
  let hi = 100;
  if (h.maxValue <= sloMs * 1000) return 0;
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    if (h.getValueAtPercentile(mid) <= sloMs * 1000) lo = mid;
    else hi = mid;
  }
  return (100 - lo) / 100;
}

/** Builds a row from a run's load result, the fleet's counts and the strategy's theory. */
export function summarize(
  strategy: string,
  load: LoadResult,
  fleet: FleetStats,
  sloMs: number,
  theory: Theory | undefined,
): Row {
  const h = load.latency;
  const at = (p: number) => h.getValueAtPercentile(p) / 1000;
  const lags = [...fleet.abortLagMs].sort((a, b) => a - b);
  return {
    strategy,
    measured: PERCENTILES.map(at),
    theory: theory ? PERCENTILES.map((p) => quantile(theory.survival, p / 100)) : undefined,
    maxMs: h.maxValue / 1000,
    cv: h.mean > 0 ? h.stdDeviation / h.mean : 0,
    tailAmplification: at(50) > 0 ? at(99) / at(50) : 0,
    slowRate: slowShare(h, sloMs),
    extraLoad: fleet.started / Math.max(1, load.calls) - 1,
    theoryExtraLoad: theory?.extraLoad,
    abortedWorkMs: fleet.abortedWorkMs,
    abortLagMs: lags.length > 0 ? (lags[lags.length >> 1] as number) : 0,
    cpuUsPerCall: load.cpuUsPerCall,
    calls: load.calls,
    errors: load.errors,
    sendLagP99Ms: load.sendLag.getValueAtPercentile(99) / 1000,
    invalid: load.invalid,
    histogram: h,
    theorySurvival: theory?.survival,
  };
}

const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

/** Lays out a header and rows: the first `left` columns left-aligned, the others right-aligned. */
export function textTable(header: string[], lines: string[][], left = 1): string[] {
  const widths = header.map((h, i) =>
    Math.max(h.length, ...lines.map((l) => (l[i] as string).length)),
  );
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i < left ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join('  ');
  return [fmt(header), fmt(widths.map((w) => '-'.repeat(w))), ...lines.map(fmt)];
}

/** What the load generator's lag means, said once under a table. */
function lagNote(rows: Row[]): string[] {
  if (!rows.some((r) => r.invalid))
    return ['lag: the load generator kept its schedule (send lag p99 within 1 ms) in every run.'];
  return [
    'lag: how late the load generator sent calls, ms (p99). Over 1 ms the machine was busy: latencies',
    'count from the intended send times, so the lag is in them, not hidden, and a row that ran',
    'while the machine was busiest can lose for that alone (rows run one after another).',
  ];
}

/** Options of `table`. */
export interface TableOptions {
  /** Every column (cost, CPU, send lag, theory beside each percentile): about 170 columns. */
  wide?: boolean;
}

/**
 * The terminal table. By default what a newcomer needs, within 100 columns: the measured
 * percentiles, share over the SLO, extra load, theory's p99 and p99.9 and the load generator's
 * lag; `wide` puts theory beside every percentile and adds max and the cost columns.
 */
export function table(rows: Row[], sloMs: number, o: TableOptions = {}): string {
  if (!o.wide) {
    const header = [
      'strategy',
      ...PERCENTILES.map((p) => `p${p}`),
      `>${sloMs}ms`,
      'extra load',
      'theory p99/p99.9',
      'lag',
    ];
    const lines = rows.map((r) => [
      r.strategy,
      ...r.measured.map(ms),
      pct(r.slowRate),
      pct(r.extraLoad),
      r.theory ? `${ms(r.theory[2] as number)}/${ms(r.theory[3] as number)}` : '-',
      r.sendLagP99Ms.toFixed(1),
    ]);
    return [
      ...textTable(header, lines),
      '',
      "Latencies in ms from each call's intended send time (open loop). theory: docs/design.md's",
      'closed forms for this profile (independent replicas, exact percentiles, no queueing): what',
      'the strategy should give; far from it means too few calls in the tail, or a busy machine.',
      `>${sloMs}ms: share of calls slower than ${sloMs} ms (the SLO). extra load: attempts beyond one per`,
      'call, as a share of calls (hedges and retries the replicas had to serve).',
      ...lagNote(rows),
    ].join('\n');
  }
  const header = [
    'strategy',
    ...PERCENTILES.map((p) => `p${p}`),
    'max',
    'CoV',
    'p99/p50',
    `>${sloMs}ms`,
    'extra load',
    'aborted work',
    'CPU/call',
    'send lag p99',
    'on time',
  ];
  const lines = rows.map((r) => [
    r.strategy,
    ...r.measured.map((v, i) => (r.theory ? `${ms(v)} (${ms(r.theory[i] as number)})` : ms(v))),
    ms(r.maxMs),
    r.cv.toFixed(2),
    r.tailAmplification.toFixed(2),
    pct(r.slowRate),
    r.theoryExtraLoad === undefined
      ? pct(r.extraLoad)
      : `${pct(r.extraLoad)} (${pct(r.theoryExtraLoad)})`,
    `${Math.round(r.abortedWorkMs)} ms`,
    `${r.cpuUsPerCall.toFixed(0)} µs`,
    `${r.sendLagP99Ms.toFixed(2)} ms`,
    r.invalid ? 'no' : 'yes',
  ]);
  return [
    ...textTable(header, lines),
    '',
    "latencies in ms from each call's intended send time (open loop); (theory): docs/design.md's closed forms",
    'for the profile. CPU/call: client CPU net of the load generator (a no-op calibration run).',
    'on time: send lag p99 <= 1 ms. A run marked "no" fell behind its schedule; its latencies still',
    'count from the intended send times, so they include that lag (no coordinated omission).',
  ].join('\n');
}
