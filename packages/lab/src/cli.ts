#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeBenchmarks } from './bench/benchmarks.js';
import { measureInference } from './bench/inference.js';
import { measureOverhead } from './bench/overhead.js';
import { runScaleCommand, SCALE_COMMANDS } from './bench/scale.js';
import { measureWarmConnections } from './bench/warm.js';
import { COLD, D2, D3, type Profile, SHIFT } from './fleet/profile.js';
import { measureFleetCost } from './fleet-budget/cost.js';
import { fleetBudgetTable, runFleetBudget } from './fleet-budget/run.js';
import { htmlReport, type TimelinePoint } from './report/html.js';
import { table } from './report/summary.js';
import { runScenario, STRATEGIES, type StrategyName } from './scenario.js';
import { simulateTrace } from './sim/simulate.js';

const HELP = `tailcut-lab: see what hedging does to the tail, and what it costs, on your machine.

usage: tailcut-lab <command> [options]

commands:
  demo       docs/design.md's D2 profile, every strategy side by side (under a minute)
  run        one scenario:  --profile d2|d3|shift|cold  --rate N  --seconds S  --replicas R
             --strategies none,fixed,cockatiel,tailcut,auto  --fixed-delay MS  --slo MS  --seed N
  simulate   replay recorded latencies through tailcut's engine under a virtual clock:
             --trace latencies.csv  [--percentiles 90,95,99]  [--budgets 0.01,0.05,0.1]  [--rate N]
  bench      overhead, tail, correlated slowness and metastability; writes BENCHMARKS.md
             [--out FILE]  [--quick]
  inference  time to first token: no hedging, first-byte and first-token commit, on OpenAI- and
             Anthropic-style streaming fleets with early events and TTFT stalls,
             and the budget when the fleet answers 429 to 30% of calls
  warm       warm against cold connections over TLS, side by side: hedge win rate and TTFT
             [--rate N]  [--seconds S]  [--rtt MS]  [--keepalive MS]
  fleet-budget  N instances (child processes) side by side, a budget each vs one fleet budget in
             Redis (needs Debian's redis-server; the lab starts it on a free loopback port):
             hedges against the fleet bound, extra load, tail, Redis killed and restarted,
             and a new instance's warm start. About 40 s.
             --instances N (6)  --rate N (20/s each)  --seconds S (12)  --kill-at S  --restart-at S
  fleet-cost    CPU per call added by the fleet budget and Redis operations per second per instance
             [--rate N (2000)]  [--seconds S (5)]  [--instances N (10)]
  streams    streaming calls in flight on one client (SSE, a token every 200 ms): heap, handles and
             timers per call, event-loop delay p99, CPU per token at a tenth, half and all of them;
             writes its part of the scale section of --out  [--calls N (10000)]  [--seconds S (120)]
             [--bare: a bare undici Agent, the baseline]
  soak       hedged calls with stalling replicas and clients started and closed: heap, handles and
             fds over time with their slopes, every call accounted for; writes its part of the
             scale section of --out  [--rate N (1000)]  [--seconds S (1200)]  [--clients N (1000)]
  sketch     bytes of delay and tail state per route and per key, and their cost per operation

options:
  --report FILE   where demo/run write the HTML report (default: lab-report.html)
  -h, --help      this text`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    profile: { type: 'string', default: 'd2' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    replicas: { type: 'string', default: '3' },
    strategies: { type: 'string', default: STRATEGIES.join(',') },
    'fixed-delay': { type: 'string' },
    slo: { type: 'string' },
    seed: { type: 'string', default: '1' },
    trace: { type: 'string' },
    percentiles: { type: 'string', default: '90,95,99' },
    budgets: { type: 'string', default: '0.01,0.05,0.1' },
    report: { type: 'string', default: 'lab-report.html' },
    out: { type: 'string', default: 'BENCHMARKS.md' },
    quick: { type: 'boolean', default: false },
    rtt: { type: 'string' },
    keepalive: { type: 'string' },
    instances: { type: 'string' },
    'kill-at': { type: 'string' },
    'restart-at': { type: 'string' },
    calls: { type: 'string' },
    clients: { type: 'string' },
    bare: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

function fail(message: string): never {
  console.error(`tailcut-lab: ${message}\n\n${HELP}`);
  process.exit(2);
}

function number(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    fail(`--${name} must be a positive number; got ${JSON.stringify(value)}`);
  return n;
}

/** A progress bar on a terminal (stderr), for runs over two seconds. */
function progressBar(seconds: number) {
  if (!process.stderr.isTTY || seconds <= 2) return undefined;
  return (strategy: string, fraction: number) => {
    const width = 30;
    const done = Math.round(fraction * width);
    process.stderr.write(
      `\r${strategy.padEnd(36)} [${'#'.repeat(done)}${' '.repeat(width - done)}] ${Math.round(fraction * 100)}%`,
    );
    if (fraction >= 1) process.stderr.write('\n');
  };
}

async function scenario(
  profile: Profile,
  name: string,
  defaults: { rate: number; seconds: number; slo: number; fixed: number; warmup?: number },
) {
  const strategies = (values.strategies ?? '').split(',').map((s) => s.trim()) as StrategyName[];
  for (const s of strategies) {
    if (![...STRATEGIES, 'unbudgeted', 'auto'].includes(s))
      fail(`unknown strategy ${JSON.stringify(s)}`);
  }
  const seconds = number('seconds', values.seconds, defaults.seconds);
  const rate = number('rate', values.rate, defaults.rate);
  const sloMs = number('slo', values.slo, defaults.slo);
  const warmupSeconds = defaults.warmup ?? 2;
  const points: TimelinePoint[] = [];
  const last = new Map<string, { hedges: number; calls: number }>();
  const rows = await runScenario({
    profile,
    replicas: number('replicas', values.replicas, 3),
    rate,
    seconds,
    seed: number('seed', values.seed, 1),
    sloMs,
    fixedDelayMs: number('fixed-delay', values['fixed-delay'], defaults.fixed),
    strategies,
    warmupSeconds,
    progress: progressBar(seconds + warmupSeconds),
    onSecond: (strategy, second) => {
      const route = strategy.stats?.().routes.lab;
      if (route === undefined) return;
      const before = last.get(strategy.name) ?? { hedges: 0, calls: 0 };
      last.set(strategy.name, { hedges: route.hedgesSent, calls: route.calls });
      points.push({
        strategy: strategy.name,
        second: second + 1 - warmupSeconds,
        delayMs: route.delayMs,
        hedges: route.hedgesSent - before.hedges,
        calls: route.calls - before.calls,
      });
    },
  });
  const text = table(rows, sloMs);
  console.log(`\n${name}: ${rate} calls/s, ${seconds} s measured, ${values.replicas} replicas\n`);
  console.log(text);
  const report = resolve(values.report ?? 'lab-report.html');
  writeFileSync(
    report,
    htmlReport(`tailcut lab: ${name}`, rows, text, { points, profile, percentile: 95 }),
  );
  console.log(`\nreport: ${report}`);
}

const command = positionals[0];
if (values.help || command === undefined || command === 'help') {
  console.log(HELP);
} else if (command === 'demo') {
  await scenario(D2, 'D2 (lognormal median 20 ms, sigma 0.4, 1% of attempts x10)', {
    rate: 200,
    seconds: 8,
    slo: 50,
    fixed: 50,
  });
} else if (command === 'run') {
  const profiles: Record<string, Profile> = { d2: D2, d3: D3, shift: SHIFT, cold: COLD };
  const name = values.profile ?? 'd2';
  const profile =
    profiles[name] ?? fail(`unknown profile ${JSON.stringify(name)} (d2, d3, shift, cold)`);
  await scenario(profile, name.toUpperCase(), {
    rate: 500,
    seconds: name === 'shift' ? 15 : 10,
    slo: 50,
    fixed: 50,
    // A cold start is the client's too: no warm-up.
    warmup: name === 'cold' ? 0 : 2,
  });
} else if (command === 'simulate') {
  if (values.trace === undefined) fail('simulate needs --trace FILE (one latency in ms per line)');
  const list = (s: string | undefined) => (s ?? '').split(',').map(Number);
  console.log(
    simulateTrace({
      trace: values.trace,
      percentiles: list(values.percentiles),
      budgets: list(values.budgets),
      rate: number('rate', values.rate, 100),
    }),
  );
} else if (command === 'bench') {
  const file = resolve(values.out ?? 'BENCHMARKS.md');
  await writeBenchmarks(file, { quick: values.quick ?? false, log: (l) => console.error(l) });
  console.log(`wrote ${file}`);
} else if (command === 'inference') {
  console.log(await measureInference((l) => console.error(l)));
} else if (command === 'warm') {
  console.log(
    await measureWarmConnections({
      rate: number('rate', values.rate, 20),
      seconds: number('seconds', values.seconds, 30),
      rttMs: number('rtt', values.rtt, 20),
      keepAliveMs: number('keepalive', values.keepalive, 250),
      log: (l) => console.error(l),
    }),
  );
} else if (command === 'overhead') {
  for (const r of await measureOverhead({ log: (l) => console.error(l) }))
    console.log(JSON.stringify(r));
} else if (command === 'fleet-budget') {
  const at = (name: 'kill-at' | 'restart-at') =>
    values[name] === undefined ? undefined : number(name, values[name], 0);
  const report = await runFleetBudget({
    instances: number('instances', values.instances, 6),
    rate: number('rate', values.rate, 20),
    seconds: number('seconds', values.seconds, 12),
    killAt: at('kill-at'),
    restartAt: at('restart-at'),
    log: (l) => console.error(l),
  });
  console.log(fleetBudgetTable(report));
} else if (command === 'fleet-cost') {
  console.log(
    JSON.stringify(
      await measureFleetCost({
        rate: number('rate', values.rate, 2_000),
        seconds: number('seconds', values.seconds, 5),
        instances: number('instances', values.instances, 10),
      }),
      null,
      2,
    ),
  );
} else if (SCALE_COMMANDS.includes(command)) {
  const flag = (name: 'calls' | 'seconds' | 'rate' | 'clients') =>
    values[name] === undefined ? undefined : number(name, values[name], 0);
  await runScaleCommand(command, {
    calls: flag('calls'),
    seconds: flag('seconds'),
    rate: flag('rate'),
    clients: flag('clients'),
    bare: values.bare ?? false,
    out: values.out ?? 'BENCHMARKS.md',
  });
} else {
  fail(`unknown command ${JSON.stringify(command)}`);
}
