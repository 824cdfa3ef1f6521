import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { D2, D3, type Profile } from '../fleet/profile.js';
import { type Row, table } from '../report/summary.js';
import { runScenario } from '../scenario.js';
import { measureOverhead } from './overhead.js';

/** Options of {@link writeBenchmarks}. */
export interface BenchOptions {
  /** Shorter runs (for a smoke check); the figures are then noisier. */
  quick?: boolean;
  log?: (line: string) => void;
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
  const overhead = await measureOverhead({
    rounds: quick ? 4 : 20,
    calls: quick ? 1000 : 4000,
    log,
  });
  out.push('## 1. Overhead: hedging configured, never firing', '');
  out.push(
    'Each variant runs in its own process at the same open-loop rate against one loopback server',
    '(another process) that answers at once; each round runs the bare variant, then the variants',
    'compared with it. CPU overhead is the median of the per-round ratios (IQR in brackets).',
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
  out.push('', 'Targets:');
  if (fetchHedge?.cpuOverhead !== undefined)
    out.push(target('fetch path CPU overhead', fetchHedge.cpuOverhead * 100, 5, '%'));
  if (reqHedge?.cpuOverhead !== undefined)
    out.push(target('interceptor CPU overhead', reqHedge.cpuOverhead * 100, 3, '%'));
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
      strategies: ['none', 'fixed', 'cockatiel', 'tailcut'],
    });
    out.push(
      `## 2${name === 'D2' ? 'a' : 'b'}. Tail: ${name} at 1,000 calls/s, ${seconds} s measured after warm-up`,
      '',
    );
    out.push('```', table(rows, slo), '```', '');
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
  const d3 = await tail('D3', D3, 20, 50);
  const d3t = d3.find((r) => r.strategy.startsWith('tailcut'));
  if (d3t)
    out.push('Targets:', target('D3 tailcut p99.9', d3t.measured[3] as number, 35, ' ms'), '');

  log('correlated slowness …');
  const perSecond: string[] = [];
  const hedgesBySecond: number[] = [];
  const callsBySecond: number[] = [];
  let lastHedges = 0;
  let lastCalls = 0;
  const rate = 500;
  await runScenario({
    profile: { ...D2, correlatedFromMs: 5000, correlatedFactor: 3 },
    replicas: 3,
    rate,
    seconds,
    warmupSeconds: 3,
    sloMs: 100,
    fixedDelayMs: 50,
    strategies: ['tailcut'],
    onSecond: (strategy, second) => {
      const s = strategy.stats?.().routes.lab;
      if (s === undefined) return;
      const hedges = s.hedgesSent - lastHedges;
      const calls = s.calls - lastCalls;
      lastHedges = s.hedgesSent;
      lastCalls = s.calls;
      hedgesBySecond.push(hedges);
      callsBySecond.push(calls);
      // The budget's bound (tested in budget.test.ts): over any 9 s, hedges are at most the
      // floor's reserve (10/s × 10 s) + ratio × the calls of those 9 s and the 10 s before.
      const sum = (xs: number[], n: number) =>
        xs.slice(Math.max(0, xs.length - n)).reduce((a, b) => a + b, 0);
      const windowHedges = sum(hedgesBySecond, 9);
      const bound = 10 * 10 + 0.05 * sum(callsBySecond, 19);
      perSecond.push(
        `| ${second - 3} | ${s.delayMs.toFixed(1)} | ${calls > 0 ? pct(hedges / calls) : '—'} | ${windowHedges} ≤ ${Math.floor(bound)} |`,
      );
    },
  });
  out.push(
    `## 3. Correlated slowness: every replica ×3 from t = 5 s (D2 body, ${rate} calls/s)`,
    '',
  );
  out.push(
    `Over any 9 s, hedges stay within the floor's reserve (10/s × the budget's 10 s) + ratio × the calls of those 9 s and the 10 s before (the bound budget.test.ts proves): the last column checks it. Within one second the rate can spike up to the bucket's size (the reserve of 100 hedges) as the slowdown starts; sustained, it is ratio + floor = 5% + 10/s ÷ ${rate}/s = ${pct(0.05 + 10 / rate)} of calls. The delay re-learns the slower distribution over its 30 s window.`,
    '',
    '| second (0 = end of warm-up) | hedge delay ms | hedges / calls that second | hedges in the last 9 s ≤ bound |',
    '|---|---|---|---|',
    ...perSecond,
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
  writeFileSync(file, `${out.join('\n')}\n`);
}
