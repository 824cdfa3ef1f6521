import * as hdr from 'hdr-histogram-js';
import { startChild } from '../bench/child.js';
import { startFleet } from '../fleet/fleet.js';
import { D2, type Profile } from '../fleet/profile.js';
import type { InstanceConfig, InstanceResult } from './instance.js';
import { startRedis, type TestRedis } from './redis-server.js';

/** Options of {@link runFleetBudget}. */
export interface FleetBudgetLabOptions {
  /** Instances (child processes) side by side. Default 6. */
  instances?: number;
  /** Calls per second per instance. Default 20. */
  rate?: number;
  /** Seconds each run lasts. Default 12. */
  seconds?: number;
  /** Budget: default 0.05, 5/s, 10 s (the issue's example). */
  ratio?: number;
  minPerSecond?: number;
  ttlMs?: number;
  syncMs?: number;
  /** The percentile each instance hedges at. Default 50: every instance wants to hedge half its calls. */
  percentile?: number;
  /** Which budgets to run, one after the other. Default both. */
  budgets?: ('local' | 'fleet')[];
  /** Kill Redis this many seconds into the fleet run… */
  killAt?: number | undefined;
  /** …and restart it (empty) at this second. */
  restartAt?: number | undefined;
  /** After the runs, start a new instance with and without the warm start. Default true. */
  warmStart?: boolean;
  replicas?: number;
  profile?: Profile;
  /** Called with a line of progress. */
  log?: (line: string) => void;
}

/** One budget's run, summed over the instances. */
export interface BudgetRun {
  budget: 'local' | 'fleet';
  calls: number;
  hedges: number;
  errors: number;
  /** ratio × calls + minPerSecond × seconds: what one fleet-wide budget allows over the run. */
  runBound: number;
  /** Hedges ÷ calls. */
  extraLoad: number;
  /** The worst window of ttl: hedges − (ratio × calls in it and the ttl before + minPerSecond × ttl). */
  worstExcess: number;
  /** The same over windows starting a ttl after Redis restarted (fleet runs with a restart). */
  worstExcessAfterRecovery: number | undefined;
  /** End-to-end latency from the intended send time, ms. */
  p50: number;
  p99: number;
  p999: number;
  /** Per instance, its modes with the second (from the run's start) they began. */
  modes: [number, string][][];
}

/** The warm start comparison: a new instance's first delay and tail, with and without. */
export interface WarmStartRun {
  warmDelayMs: number;
  coldDelayMs: number;
  warmP99: number;
  coldP99: number;
}

/** The lab's whole answer. */
export interface FleetBudgetReport {
  runs: BudgetRun[];
  warm: WarmStartRun | undefined;
  options: Required<Omit<FleetBudgetLabOptions, 'killAt' | 'restartAt' | 'log'>> & {
    killAt: number | undefined;
    restartAt: number | undefined;
  };
}

const BIN_MS = 100;

async function startInstances(configs: InstanceConfig[]) {
  return Promise.all(
    configs.map(async (c) => {
      const child = await startChild('../fleet-budget/instance.js', [JSON.stringify(c)]);
      return child;
    }),
  );
}

async function runInstances(
  configs: InstanceConfig[],
  during?: (startAt: number) => Promise<void>,
) {
  const children = await startInstances(configs);
  const startAt = Date.now() + 300;
  const results = children.map((c) =>
    c.ask({ go: startAt }, (m) => 'result' in m).then((m) => m.result as InstanceResult),
  );
  await during?.(startAt);
  const out = await Promise.all(results);
  await Promise.all(children.map((c) => c.stop()));
  return { startAt, results: out };
}

/** The worst excess over the bound, over windows of `ttlMs` starting at or after `fromBin`. */
function worstExcess(
  bins: Map<number, [number, number]>,
  o: { ratio: number; minPerSecond: number; ttlMs: number },
  firstBin: number,
  lastBin: number,
  fromBin = firstBin,
): number | undefined {
  const width = o.ttlMs / BIN_MS;
  let worst: number | undefined;
  for (let start = fromBin; start + width <= lastBin + 1; start++) {
    let hedges = 0;
    let calls = 0;
    for (let b = start - width; b < start + width; b++) {
      const v = bins.get(b);
      if (v === undefined) continue;
      calls += v[0];
      if (b >= start) hedges += v[1];
    }
    const excess = hedges - (o.ratio * calls + (o.minPerSecond * o.ttlMs) / 1000);
    worst = Math.max(worst ?? Number.NEGATIVE_INFINITY, excess);
  }
  return worst;
}

function summarize(
  budget: 'local' | 'fleet',
  startAt: number,
  results: InstanceResult[],
  o: Required<Pick<FleetBudgetLabOptions, 'ratio' | 'minPerSecond' | 'ttlMs' | 'seconds'>>,
  recoveredAt: number | undefined,
): BudgetRun {
  const bins = new Map<number, [number, number]>();
  const latency = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000 });
  let calls = 0;
  let hedges = 0;
  let errors = 0;
  for (const r of results) {
    for (const [bin, c, h] of r.bins) {
      const v = bins.get(bin) ?? [0, 0];
      v[0] += c;
      v[1] += h;
      bins.set(bin, v);
    }
    const h = hdr.decodeFromCompressedBase64(r.latency);
    latency.add(h);
    calls += r.calls;
    hedges += r.hedges;
    errors += r.errors;
  }
  const keys = [...bins.keys()];
  const first = Math.min(...keys);
  const last = Math.max(...keys);
  const ms = (p: number) => latency.getValueAtPercentile(p) / 1000;
  return {
    budget,
    calls,
    hedges,
    errors,
    runBound: o.ratio * calls + o.minPerSecond * o.seconds,
    extraLoad: hedges / Math.max(1, calls),
    worstExcess: worstExcess(bins, o, first, last) ?? 0,
    worstExcessAfterRecovery:
      recoveredAt === undefined
        ? undefined
        : worstExcess(bins, o, first, last, Math.ceil((recoveredAt + o.ttlMs) / BIN_MS)),
    p50: ms(50),
    p99: ms(99),
    p999: ms(99.9),
    modes: results.map((r) => r.modes.map(([at, m]) => [Math.round((at - startAt) / 100) / 10, m])),
  };
}

/**
 * Runs N instances side by side against one replica fleet, first each with its own budget, then
 * all on one fleet budget in Redis (a `redis-server` the lab starts on a free loopback port,
 * optionally killed and restarted mid-run), and compares hedges with the fleet-wide bound, the
 * extra load and the tail. Then starts one new instance with and one without the warm start.
 */
export async function runFleetBudget(
  options: FleetBudgetLabOptions = {},
): Promise<FleetBudgetReport> {
  const o = {
    instances: options.instances ?? 6,
    rate: options.rate ?? 20,
    seconds: options.seconds ?? 12,
    ratio: options.ratio ?? 0.05,
    minPerSecond: options.minPerSecond ?? 5,
    ttlMs: options.ttlMs ?? 10_000,
    syncMs: options.syncMs ?? 200,
    percentile: options.percentile ?? 50,
    budgets: options.budgets ?? ['local', 'fleet'],
    warmStart: options.warmStart ?? true,
    replicas: options.replicas ?? 3,
    profile: options.profile ?? D2,
    killAt: options.killAt,
    restartAt: options.restartAt,
  };
  const log = options.log ?? (() => {});
  const fleet = await startFleet(o.replicas, o.profile);
  let redis: TestRedis | undefined;
  try {
    redis = await startRedis();
    const name = `lab-${process.pid}-${Date.now()}`;
    const config = (budget: 'local' | 'fleet', warmStart = false): InstanceConfig => ({
      origins: fleet.origins,
      budget,
      redisUrl: (redis as TestRedis).url,
      name,
      ratio: o.ratio,
      minPerSecond: o.minPerSecond,
      ttlMs: o.ttlMs,
      syncMs: o.syncMs,
      percentile: o.percentile,
      rate: o.rate,
      seconds: o.seconds,
      warmStart,
    });
    const runs: BudgetRun[] = [];
    for (const budget of o.budgets) {
      log(
        `${budget === 'fleet' ? 'one fleet budget in Redis' : 'a budget per instance'}: ${o.instances} instances, ${o.seconds} s`,
      );
      let recoveredAt: number | undefined;
      const { startAt, results } = await runInstances(
        Array.from({ length: o.instances }, () => config(budget, o.warmStart)),
        async (at) => {
          if (budget !== 'fleet' || o.killAt === undefined) return;
          const r = redis as TestRedis;
          await sleepUntil(at + o.killAt * 1000);
          log(`  Redis killed at ${o.killAt} s`);
          await r.kill();
          if (o.restartAt === undefined) return;
          await sleepUntil(at + o.restartAt * 1000);
          await r.restart();
          recoveredAt = Date.now();
          log(`  Redis restarted (empty) at ${o.restartAt} s`);
        },
      );
      runs.push(summarize(budget, startAt, results, o, recoveredAt));
    }
    let warm: WarmStartRun | undefined;
    if (o.warmStart && o.budgets.includes('fleet')) {
      log('a new instance, with and without the warm start (fleet budget both)');
      const short = { seconds: 4, rate: 50, percentile: 95 };
      const { results } = await runInstances([
        { ...config('fleet', true), ...short },
        { ...config('fleet', false), ...short },
      ]);
      const p99 = (r: InstanceResult) =>
        hdr.decodeFromCompressedBase64(r.latency).getValueAtPercentile(99) / 1000;
      const [w, c] = results as [InstanceResult, InstanceResult];
      warm = {
        warmDelayMs: w.startDelayMs,
        coldDelayMs: c.startDelayMs,
        warmP99: p99(w),
        coldP99: p99(c),
      };
    }
    return { runs, warm, options: o };
  } finally {
    await redis?.kill();
    await fleet.stop();
  }
}

async function sleepUntil(wallMs: number): Promise<void> {
  const wait = wallMs - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

/** The report as a text table. */
export function fleetBudgetTable(report: FleetBudgetReport): string {
  const o = report.options;
  const lines = [
    `${o.instances} instances × ${o.rate} calls/s × ${o.seconds} s, each hedging at p${o.percentile}; budget ratio ${o.ratio}, floor ${o.minPerSecond}/s, ttl ${o.ttlMs / 1000} s${o.killAt === undefined ? '' : `; Redis killed at ${o.killAt} s, restarted at ${o.restartAt ?? '-'} s`}`,
    '',
    '| budget | calls | hedges | fleet bound over the run | extra load | worst ttl window vs bound | after recovery | p50 ms | p99 ms | p99.9 ms | failed calls |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of report.runs) {
    const ex = (v: number | undefined) =>
      v === undefined ? '—' : `${v > 0 ? '+' : ''}${v.toFixed(1)}`;
    lines.push(
      `| ${r.budget === 'fleet' ? 'fleet (Redis)' : 'per instance'} | ${r.calls} | ${r.hedges} | ${r.runBound.toFixed(0)} | ${(100 * r.extraLoad).toFixed(1)}% | ${ex(r.worstExcess)} | ${ex(r.worstExcessAfterRecovery)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.p999.toFixed(1)} | ${r.errors} |`,
    );
  }
  const fleet = report.runs.find((r) => r.budget === 'fleet');
  if (fleet && o.killAt !== undefined) {
    lines.push('', 'modes per instance (second: mode):');
    fleet.modes.forEach((m, i) => {
      lines.push(`  ${i}: ${m.map(([at, mode]) => `${at}: ${mode}`).join(', ')}`);
    });
  }
  const w = report.warm;
  if (w) {
    lines.push(
      '',
      `new instance, first 4 s at 50 calls/s, hedging at p95: warm start delay ${w.warmDelayMs.toFixed(1)} ms, p99 ${w.warmP99.toFixed(1)} ms; cold start delay ${w.coldDelayMs.toFixed(1)} ms (initialDelayMs), p99 ${w.coldP99.toFixed(1)} ms`,
    );
  }
  return lines.join('\n');
}
