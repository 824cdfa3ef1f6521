import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { COLD, D2, D3, type Profile, SHIFT } from '../fleet/profile.js';
import { type Row, table } from '../report/summary.js';
import { runScenario } from '../scenario.js';
import { quantile, survival } from '../theory.js';
import { measureOverhead } from './overhead.js';
import { scaleSection } from './scale-section.js';

/** Options of {@link writeBenchmarks}. */
export interface BenchOptions {
  /** Shorter runs (for a smoke check); the figures are then noisier. */
  quick?: boolean;
  log?: (line: string) => void;
  /** Another build of tailcut (its `dist/index.js`) measured beside this one: before/after. */
  before?: string | undefined;
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

function target(
  label: string,
  measured: number,
  limit: number,
  unit: string,
  lowerIsBetter = true,
): string {
  const met = lowerIsBetter ? measured <= limit : measured >= limit;
  const by = lowerIsBetter ? measured - limit : limit - measured;
  return `- ${label}: ${measured.toFixed(2)}${unit} (target ${limit}${unit}) — ${met ? 'met' : `**missed by ${by.toFixed(2)}${unit}**`}`;
}

/**
 * Runs the lab's benchmarks and writes them to `file` as Markdown: overhead, tail (D2, D3),
 * correlated slowness and the metastability check, with the machine, Node version, date and
 * the commands. Targets that are missed are reported as missed, with by how much.
 */
export async function writeBenchmarks(file: string, o: BenchOptions = {}): Promise<void> {
  const log = o.log ?? (() => {});
  const quick = o.quick ?? false;
  const seconds = quick ? 3 : 10;
  const out: string[] = [];
  const cpu = cpus()[0];
  out.push('# tailcut benchmarks', '');
  out.push(
    `Machine: ${cpus().length} × ${cpu?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; ${new Date().toISOString()}.`,
    '',
    'Command: `npx -y pnpm@12.4.2 bench` (runs `node packages/lab/dist/cli.js bench`). Every figure below was',
    'measured in that run; absolute times on a shared 2-core machine drift, so compare within a table.',
    '',
  );

  log('overhead …');
  const { rows: overhead, breakdown } = await measureOverhead({
    rounds: quick ? 4 : 20,
    calls: quick ? 1000 : 4000,
    profileCalls: quick ? 4000 : 20_000,
    before: o.before,
    log,
  });
  out.push('## 1. Overhead: hedging configured, never firing', '');
  out.push(
    'Each variant runs in its own process at the same open-loop rate against one loopback server',
    '(another process) that answers at once; each round runs the bare variant, then the variants',
    'compared with it. CPU overhead is the median of the per-round ratios (IQR in brackets).',
    '"OTel SDK installed": the SDK\'s MeterProvider and BasicTracerProvider registered globally (every',
    'call then records its metrics and makes its spans). Without an SDK tailcut records nothing.',
    ...(o.before === undefined
      ? []
      : [
          '"the baseline build": tailcut built from an earlier commit (`bench --before PATH`), in the',
          'same rounds: before and after, paired.',
        ]),
    '',
    '| variant | CPU µs/call | calls/s | CPU overhead vs bare | heap bytes per in-flight call |',
    '|---|---|---|---|---|',
  );
  for (const r of overhead) {
    out.push(
      `| ${r.name} | ${r.cpuUsPerCall.toFixed(1)} | ${Math.round(r.callsPerSecond)} | ${r.cpuOverhead === undefined ? '—' : `${pct(r.cpuOverhead)} (${(r.cpuOverheadIqr ?? []).map(pct).join(' … ')})`} | ${Math.round(r.heapBytesPerInFlightCall)} |`,
    );
  }
  const byId = (id: string) => overhead.find((r) => r.id === id);
  const fetchBare = byId('fetch-bare');
  const fetchHedge = byId('fetch-hedge');
  const reqBare = byId('request-bare');
  const reqHedge = byId('request-hedge');
  for (const b of breakdown) {
    const name = (id: string) => overhead.find((r) => r.id === id)?.name ?? id;
    out.push(
      '',
      `Where the CPU goes, ${name(b.variant)} against ${name(b.baseline)}: self time per call by`,
      "component, from V8's sampling profiler (100 µs interval) over the same open-loop calls. The",
      'sampled totals run above the CPU figures above (the profiler costs time of its own).',
      '',
      `| component | ${name(b.baseline)}, µs/call | ${name(b.variant)}, µs/call | difference |`,
      '|---|---|---|---|',
    );
    const entries = Object.entries(b.components).sort(
      ([, x], [, y]) => y[1] - y[0] - (x[1] - x[0]),
    );
    let total: [number, number] = [0, 0];
    for (const [component, [bare, mine]] of entries) {
      total = [total[0] + bare, total[1] + mine];
      out.push(
        `| ${component} | ${bare.toFixed(1)} | ${mine.toFixed(1)} | ${(mine - bare >= 0 ? '+' : '') + (mine - bare).toFixed(1)} |`,
      );
    }
    out.push(
      `| total | ${total[0].toFixed(1)} | ${total[1].toFixed(1)} | +${(total[1] - total[0]).toFixed(1)} |`,
    );
  }
  out.push('', 'Targets:');
  if (fetchHedge?.cpuOverhead !== undefined)
    out.push(target('fetch path CPU overhead', fetchHedge.cpuOverhead * 100, 8, '%'));
  const fetchPass = byId('fetch-passthrough');
  if (fetchHedge?.cpuOverhead !== undefined && fetchPass?.cpuOverhead !== undefined) {
    out.push(
      `  (of which the pass-through floor, undici 7 converting fetch's legacy handler for any interceptor: ${pct(fetchPass.cpuOverhead)}; tailcut beyond it: ${pct(fetchHedge.cpuOverhead - fetchPass.cpuOverhead)})`,
    );
  }
  if (reqHedge?.cpuOverhead !== undefined)
    out.push(target('interceptor CPU overhead', reqHedge.cpuOverhead * 100, 10, '%'));
  if (fetchBare && fetchHedge) {
    out.push(
      target(
        'extra heap per in-flight call (fetch)',
        fetchHedge.heapBytesPerInFlightCall - fetchBare.heapBytesPerInFlightCall,
        2048,
        ' B',
      ),
    );
  }
  if (reqBare && reqHedge) {
    out.push(
      target(
        'extra heap per in-flight call (interceptor)',
        reqHedge.heapBytesPerInFlightCall - reqBare.heapBytesPerInFlightCall,
        2048,
        ' B',
      ),
    );
  }
  out.push('');

  const tail = async (
    name: string,
    profile: Profile,
    fixed: number,
    slo: number,
  ): Promise<Row[]> => {
    log(`tail ${name} …`);
    const rows = await runScenario({
      profile,
      replicas: 3,
      rate: 1000,
      seconds,
      warmupSeconds: 3,
      sloMs: slo,
      fixedDelayMs: fixed,
      strategies: ['none', 'fixed', 'cockatiel', 'tailcut', 'auto'],
    });
    out.push(
      `## 2${name === 'D2' ? 'a' : 'b'}. Tail: ${name} at 1,000 calls/s, ${seconds} s measured after warm-up`,
      '',
    );
    out.push('```', table(rows, slo, { wide: true }), '```', '');
    return rows;
  };
  const d2 = await tail('D2', D2, 50, 50);
  const d2t = d2.find((r) => r.strategy.startsWith('tailcut'));
  if (d2t?.theory) {
    out.push('Targets:');
    out.push(
      target(
        'D2 tailcut p99 distance from theory',
        Math.abs((d2t.measured[2] as number) / (d2t.theory[2] as number) - 1) * 100,
        10,
        '%',
      ),
    );
    out.push(
      target(
        'D2 tailcut p99.9 distance from theory',
        Math.abs((d2t.measured[3] as number) / (d2t.theory[3] as number) - 1) * 100,
        10,
        '%',
      ),
    );
    out.push('');
  }
  const d2a = d2.find((r) => r.strategy === 'tailcut (auto, budget)');
  if (d2t && d2a) {
    out.push(
      "`percentile: 'auto'` on D2 (target: no worse than p95, side by side in one run; 1.05× allows for the run's noise, see §2c for D3's spread):",
      target(
        'D2 auto p99 ÷ p95 p99',
        (d2a.measured[2] as number) / (d2t.measured[2] as number),
        1.05,
        '×',
      ),
      target(
        'D2 auto p99.9 ÷ p95 p99.9',
        (d2a.measured[3] as number) / (d2t.measured[3] as number),
        1.05,
        '×',
      ),
      '',
    );
  }
  const d3 = await tail('D3', D3, 20, 50);
  const d3t = d3.find((r) => r.strategy === 'tailcut (p95, budget)');
  const d3a = d3.find((r) => r.strategy === 'tailcut (auto, budget)');
  const d3f = d3.find((r) => r.strategy.startsWith('fixed'));
  if (d3t && d3a && d3f)
    out.push(
      'Targets:',
      target('D3 tailcut p99.9', d3t.measured[3] as number, 35, ' ms'),
      target('D3 auto extra load', d3a.extraLoad * 100, 1.5, '%'),
      target(
        "D3 auto p99.9 ÷ fixed 20 ms p99.9 (same run; 1.05× for the run's noise)",
        (d3a.measured[3] as number) / (d3f.measured[3] as number),
        1.05,
        '×',
      ),
      '',
    );

  log('D3 ten times …');
  const runs = quick ? 2 : 10;
  const p999: Record<string, number[]> = {};
  const load: Record<string, number[]> = {};
  for (let i = 0; i < runs; i++) {
    const rows = await runScenario({
      profile: D3,
      replicas: 3,
      rate: 1000,
      seconds,
      warmupSeconds: 3,
      seed: 100 + i,
      sloMs: 50,
      fixedDelayMs: 20,
      strategies: ['fixed', 'tailcut', 'auto'],
    });
    for (const r of rows) {
      p999[r.strategy] = [...(p999[r.strategy] ?? []), r.measured[3] as number];
      load[r.strategy] = [...(load[r.strategy] ?? []), r.extraLoad];
    }
  }
  const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
  const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] as number;
  out.push(
    `## 2c. D3 ${runs} times (1,000 calls/s, ${seconds} s measured each, seeds 100…${99 + runs})`,
    '',
    '| strategy | p99.9 min ms | median | max | runs ≤ 35 ms | extra load median |',
    '|---|---|---|---|---|---|',
    ...Object.keys(p999).map((name) => {
      const xs = p999[name] as number[];
      return `| ${name} | ${Math.min(...xs).toFixed(1)} | ${median(xs).toFixed(1)} | ${Math.max(...xs).toFixed(1)} | ${xs.filter((x) => x <= 35).length} of ${xs.length} | ${pct(median(load[name] as number[]))} |`;
    }),
    '',
  );

  log('shift up and down …');
  const rate = 500;
  const perSecond: string[] = [];
  const samples: { at: number; delay: number }[] = [];
  let sampler: NodeJS.Timeout | undefined;
  let measureStart = 0;
  let lastHedges = 0;
  let lastCalls = 0;
  const warmup = 3;
  await runScenario({
    profile: SHIFT,
    replicas: 3,
    rate,
    seconds: 15,
    warmupSeconds: warmup,
    sloMs: 100,
    fixedDelayMs: 50,
    strategies: ['tailcut'],
    onSecond: (strategy, second) => {
      const s = strategy.stats?.().routes.lab;
      if (s === undefined) return;
      if (sampler === undefined) {
        // The delay every 100 ms, for the re-learn times.
        measureStart = performance.now() + (warmup - second - 1) * 1000;
        sampler = setInterval(() => {
          const d = strategy.stats?.().routes.lab?.delayMs;
          if (d !== undefined) samples.push({ at: performance.now() - measureStart, delay: d });
        }, 100);
      }
      const hedges = s.hedgesSent - lastHedges;
      const calls = s.calls - lastCalls;
      lastHedges = s.hedgesSent;
      lastCalls = s.calls;
      perSecond.push(
        `| ${second + 1 - warmup} | ${s.delayMs.toFixed(1)} | ${calls > 0 ? pct(hedges / calls) : '—'} |`,
      );
    },
  });
  clearInterval(sampler);
  const p95 = quantile(survival(D2), 0.95);
  /** Time after `from` (ms since measurement start) until the delay stays within 20% of `target`. */
  const relearn = (from: number, to: number, goal: number) => {
    const window = samples.filter((x) => x.at > from && x.at <= to);
    const last = window.findLastIndex((x) => Math.abs(x.delay / goal - 1) > 0.2);
    if (last === window.length - 1) return Number.POSITIVE_INFINITY;
    return ((window[last + 1]?.at ?? from) - from) / 1000;
  };
  const up = relearn(5000, 10_000, p95 * 3);
  const down = relearn(10_000, 15_000, p95);
  const sustained = 0.05 + 10 / rate;
  out.push(
    `## 3. The fleet shifts: every replica ×3 from t = 5 s to t = 10 s (D2, ${rate} calls/s)`,
    '',
    `The true p95 is ${p95.toFixed(1)} ms, then ${(p95 * 3).toFixed(1)} ms, then ${p95.toFixed(1)} ms again. Re-learn time: until the delay (read every 100 ms) stays within 20% of the new steady p95. The budget sustains ratio + floor = 5% + 10/s ÷ ${rate}/s = ${pct(sustained)} of calls, and paces spending to at most twice that in any second.`,
    '',
    target('re-learn after ×3 up', up, 2, ' s'),
    target('re-learn after back down', down, 2, ' s'),
    target(
      'hedges in the worst second, share of calls',
      Math.max(...perSecond.map((r) => Number.parseFloat(r.split('|')[3] ?? '0'))),
      sustained * 200,
      '%',
    ),
    '',
    '| second (0 = end of warm-up) | hedge delay ms | hedges / calls that second |',
    '|---|---|---|',
    ...perSecond,
    '',
  );

  log('cold start …');
  const cold = await runScenario({
    profile: COLD,
    replicas: 3,
    rate,
    seconds: 8,
    warmupSeconds: 2,
    fleetClockFrom: 'start',
    sloMs: 100,
    fixedDelayMs: 50,
    strategies: ['tailcut'],
  });
  const warm = await runScenario({
    profile: D2,
    replicas: 3,
    rate,
    seconds: 8,
    warmupSeconds: 2,
    sloMs: 100,
    fixedDelayMs: 50,
    strategies: ['tailcut'],
  });
  const coldP99 = cold[0]?.measured[2] as number;
  const warmP99 = warm[0]?.measured[2] as number;
  out.push(
    `## 3b. Cold start: the fleet ×8 slower for its first 2 s, the client new (D2, ${rate} calls/s)`,
    '',
    `The p99 of the 8 s after the cold start: ${coldP99.toFixed(1)} ms; a warm client on a warm fleet, same run: ${warmP99.toFixed(1)} ms.`,
    '',
    target('cold ÷ warm p99', coldP99 / warmP99, 1.2, '×'),
    '',
  );

  log('metastability …');
  const service = { medianMs: 10, sigma: 0.4 };
  const concurrency = 4;
  const meanMs = service.medianMs * Math.exp(service.sigma ** 2 / 2);
  const metaRate = Math.round((0.85 * 3 * concurrency * 1000) / meanMs);
  const meta = await runScenario({
    profile: { ...service, concurrency, ignoreAborts: true },
    replicas: 3,
    rate: metaRate,
    seconds,
    warmupSeconds: 3,
    sloMs: 100,
    fixedDelayMs: 15,
    strategies: ['fixed', 'unbudgeted', 'tailcut'],
    fleetPerStrategy: true,
  });
  out.push(
    `## 4. Metastability: load-dependent replicas at utilisation 0.85, losers not aborted by the server`,
    '',
    `3 replicas, each a FIFO queue serving ${concurrency} at once (lognormal median ${service.medianMs} ms, sigma ${service.sigma}); ${metaRate} calls/s; a fresh fleet for each strategy. Aborted attempts keep their slot until done, so every hedge is real extra work.`,
    '',
    '| strategy | p50 ms | p99 ms | completed calls/s | extra load |',
    '|---|---|---|---|---|',
    ...meta.map(
      (r) =>
        `| ${r.strategy} | ${(r.measured[0] as number).toFixed(1)} | ${(r.measured[2] as number).toFixed(1)} | ${Math.round((r.calls - r.errors) / seconds)} | ${pct(r.extraLoad)} |`,
    ),
    '',
  );
  // The scale section is written by `tailcut-lab streams` and `soak`: kept as it was.
  out.push('', scaleSection(file));
  writeFileSync(file, `${out.join('\n')}\n`);
}
