#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { writeBenchmarks } from './bench/benchmarks.js';
import { INFERENCE_SECONDS, measureInference } from './bench/inference.js';
import { measureOverhead } from './bench/overhead.js';
import { runScaleCommand, SCALE_COMMANDS } from './bench/scale.js';
import { measureWarmConnections } from './bench/warm.js';
import { D2_INTRO, D3_INTRO, d3Verdict } from './demo-text.js';
import { COLD, D2, D3, type Profile, SHIFT } from './fleet/profile.js';
import { measureFleetCost } from './fleet-budget/cost.js';
import { fleetBudgetTable, runFleetBudget } from './fleet-budget/run.js';
import { freshReportPath, reportPathProblem } from './report/file.js';
import { htmlReport, type TimelinePoint } from './report/html.js';
import { type Progress, startProgress } from './report/progress.js';
import { type Row, table } from './report/summary.js';
import { runScenario, STRATEGIES, type StrategyName } from './scenario.js';
import { simulateTrace } from './sim/simulate.js';
import { TraceError } from './sim/trace.js';

const HELP = `tailcut-lab: see what hedging does to the tail, and what it costs, on your machine.

usage: tailcut-lab <command> [options]

commands:
  demo       about a minute: D3 (99% of calls ~10 ms, 1% ~1 s), where a fixed delay tuned for
             another fleet hedges too late and tailcut's learned delay is right; then D2, every
             strategy side by side, the honest comparison
  run        one scenario:  --profile d2|d3|shift|cold  --rate N  --seconds S  --replicas R
             --strategies none,fixed,cockatiel,tailcut,auto  --fixed-delay MS  --slo MS  --seed N
  simulate   replay recorded latencies (ms) through tailcut's engine under a virtual clock and
             recommend a hedge percentile and budget:
             --trace FILE  CSV with a header line, JSON lines (.jsonl) or a HAR file (.har)
             [--column NAME]  the latency column (CSV) or field (JSON lines); needed when
                              several columns are numeric
             [--route-column NAME]  one table per route (HAR: always, by method and path)
             [--percentiles 90,95,99]  [--budgets 0.01,0.05,0.1]  [--rate N]
             [--calls N]  calls simulated per configuration (20000)
  bench      overhead, tail, correlated slowness and metastability; writes BENCHMARKS.md
             [--out FILE]  [--quick]  [--before PATH]  (PATH: another build's dist/index.js,
             measured beside this one in the overhead rounds)
  overhead   the overhead rounds alone, as JSON lines  [--before PATH]
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
  --report FILE   where demo/run write the HTML report (default: lab-report.html); if it
                  exists, the report goes to FILE-2.html (-3, ...) instead, and the run says so
  --force         overwrite the --report file
  --wide          the full tables (theory beside each percentile, cost columns; ~170 columns)
  -h, --help      this text`;

const { values, positionals } = parse({
  allowPositionals: true,
  options: {
    profile: { type: 'string', default: 'd2' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    replicas: { type: 'string', default: '3' },
    strategies: { type: 'string' },
    'fixed-delay': { type: 'string' },
    slo: { type: 'string' },
    seed: { type: 'string', default: '1' },
    trace: { type: 'string' },
    column: { type: 'string' },
    'route-column': { type: 'string' },
    calls: { type: 'string' },
    percentiles: { type: 'string', default: '90,95,99' },
    budgets: { type: 'string', default: '0.01,0.05,0.1' },
    report: { type: 'string', default: 'lab-report.html' },
    out: { type: 'string', default: 'BENCHMARKS.md' },
    quick: { type: 'boolean', default: false },
    before: { type: 'string' },
    wide: { type: 'boolean', default: false },
    force: { type: 'boolean', default: false },
    rtt: { type: 'string' },
    keepalive: { type: 'string' },
    instances: { type: 'string' },
    'kill-at': { type: 'string' },
    'restart-at': { type: 'string' },
    clients: { type: 'string' },
    bare: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

function fail(message: string): never {
  console.error(`tailcut-lab: ${message}\nsee tailcut-lab --help`);
  process.exit(2);
}

/**
 * parseArgs on the command line, `--name -0.1` joined into `--name=-0.1` first (parseArgs
 * refuses a value that starts with '-', and the range check then names the option and its
 * value); a refusal (an unknown option, a missing value) is one line and exit code 2.
 */
function parse<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const args: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    if (/^--[^=]+$/.test(arg) && next !== undefined && /^-[\d.]/.test(next)) {
      args.push(`${arg}=${next}`);
      i++;
    } else args.push(arg);
  }
  try {
    return parseArgs({ ...config, args } as T);
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    const option = /'([^']+)'/.exec(message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined)
      fail(`unknown option ${option}`);
    fail(message.split('\n')[0] as string);
  }
}

function number(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    fail(`--${name} must be a positive number; got ${JSON.stringify(value)}`);
  return n;
}

interface ScenarioDefaults {
  rate: number;
  seconds: number;
  slo: number;
  fixed: number;
  warmup?: number;
  /** The strategies when --strategies is not given. */
  strategies?: readonly StrategyName[];
}

function strategiesOf(defaults: ScenarioDefaults): StrategyName[] {
  const given = values.strategies?.split(',').map((s) => s.trim()) as StrategyName[] | undefined;
  const strategies = given ?? [...(defaults.strategies ?? STRATEGIES)];
  for (const s of strategies) {
    if (![...STRATEGIES, 'unbudgeted', 'auto'].includes(s))
      fail(`unknown strategy ${JSON.stringify(s)}`);
  }
  return strategies;
}

/** How long a scenario takes, s: each strategy's warm-up and measurement, and the calibration. */
function expectedSeconds(defaults: ScenarioDefaults): number {
  const seconds = number('seconds', values.seconds, defaults.seconds);
  return 2 + strategiesOf(defaults).length * (seconds + (defaults.warmup ?? 2) + 0.5);
}

async function scenario(
  profile: Profile,
  name: string,
  defaults: ScenarioDefaults,
  progress: Progress,
  report: string,
): Promise<Row[]> {
  const strategies = strategiesOf(defaults);
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
    progress: (strategy) => progress.phase(`${name.split(' ')[0]}: ${strategy}`),
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
  const text = table(rows, sloMs, { wide: values.wide ?? false });
  console.log(`\n${name}: ${rate} calls/s, ${seconds} s measured, ${values.replicas} replicas\n`);
  console.log(text);
  const file = freshReportPath(report, values.force ?? false);
  writeFileSync(
    file,
    htmlReport(`tailcut lab: ${name}`, rows, table(rows, sloMs, { wide: true }), {
      points,
      profile,
      percentile: 95,
    }),
  );
  const kept = file === report ? '' : ` (${basename(report)} exists: kept; --force overwrites it)`;
  console.log(`\nreport: ${file}${kept}`);
  return rows;
}

/** `name-d3.html` beside `name.html`: one report per scenario of the demo. */
function reportPath(suffix: string): string {
  const base = resolve(values.report ?? 'lab-report.html');
  if (suffix === '') return base;
  const dot = base.lastIndexOf('.');
  return dot > base.lastIndexOf('/')
    ? `${base.slice(0, dot)}-${suffix}${base.slice(dot)}`
    : `${base}-${suffix}`;
}

// 2,000 calls per strategy: the p99 rests on 20 of them, the p99.9 on 2.
const D3_DEMO: ScenarioDefaults = {
  rate: 400,
  seconds: 5,
  slo: 50,
  fixed: 50,
  strategies: ['none', 'fixed', 'tailcut'],
};
const D2_DEMO: ScenarioDefaults = { rate: 200, seconds: 8, slo: 50, fixed: 50 };

const command = positionals[0];
const reportProblem =
  command === 'demo' || command === 'run' ? reportPathProblem(reportPath('')) : undefined;
if (reportProblem !== undefined) fail(reportProblem);
if (values.help || command === undefined || command === 'help') {
  console.log(HELP);
} else if (command === 'demo') {
  const progress = startProgress({
    title: 'demo',
    expectedSeconds: expectedSeconds(D3_DEMO) + expectedSeconds(D2_DEMO),
  });
  console.log(D3_INTRO);
  const d3 = await scenario(
    D3,
    'D3 (99% of attempts ~10 ms, 1% x100, ~1 s)',
    D3_DEMO,
    progress,
    reportPath('d3'),
  );
  console.log(`\n${d3Verdict(d3)}\n\n${D2_INTRO}`);
  await scenario(
    D2,
    'D2 (lognormal median 20 ms, sigma 0.4, 1% of attempts x10)',
    D2_DEMO,
    progress,
    reportPath(''),
  );
  progress.stop();
} else if (command === 'run') {
  const profiles: Record<string, Profile> = { d2: D2, d3: D3, shift: SHIFT, cold: COLD };
  const name = values.profile ?? 'd2';
  const profile =
    profiles[name] ?? fail(`unknown profile ${JSON.stringify(name)} (d2, d3, shift, cold)`);
  const defaults: ScenarioDefaults = {
    rate: 500,
    seconds: name === 'shift' ? 15 : 10,
    slo: 50,
    fixed: 50,
    // A cold start is the client's too: no warm-up.
    warmup: name === 'cold' ? 0 : 2,
  };
  const progress = startProgress({
    title: `run ${name}`,
    expectedSeconds: expectedSeconds(defaults),
  });
  await scenario(profile, name.toUpperCase(), defaults, progress, reportPath(''));
  progress.stop();
} else if (command === 'simulate') {
  if (values.trace === undefined)
    fail('simulate needs --trace FILE (CSV with a header, .jsonl or .har)');
  const list = (name: 'percentiles' | 'budgets', below: number) =>
    (values[name] ?? '').split(',').map((cell) => {
      const n = Number(cell);
      if (cell.trim() === '' || !(n > 0 && n < below))
        fail(
          `--${name} must be numbers above 0 and below ${below} (both excluded), comma-separated; got ${JSON.stringify(values[name])}`,
        );
      return n;
    });
  const percentiles = list('percentiles', 100);
  const budgets = list('budgets', 1);
  try {
    console.log(
      simulateTrace({
        trace: values.trace,
        column: values.column,
        routeColumn: values['route-column'],
        percentiles,
        budgets,
        rate: number('rate', values.rate, 100),
        calls: number('calls', values.calls, 20_000),
      }),
    );
  } catch (err) {
    if (!(err instanceof TraceError)) throw err;
    console.error(`tailcut-lab: ${err.message}`);
    process.exit(2);
  }
} else if (command === 'bench') {
  const file = resolve(values.out ?? 'BENCHMARKS.md');
  const quick = values.quick ?? false;
  const progress = startProgress({ title: 'bench', expectedSeconds: quick ? 150 : 700 });
  await writeBenchmarks(file, {
    quick,
    before: values.before === undefined ? undefined : resolve(values.before),
    log: (l) => progress.phase(l.replace(/ …$/, '')),
  });
  progress.stop();
  console.log(`wrote ${file}`);
} else if (command === 'inference') {
  const progress = startProgress({ title: 'inference', expectedSeconds: INFERENCE_SECONDS });
  const text = await measureInference((l) => progress.phase(l.replace(/^inference: /, '')));
  progress.stop();
  console.log(text);
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
  const { rows, breakdown } = await measureOverhead({
    before: values.before,
    log: (l) => console.error(l),
  });
  for (const r of rows) console.log(JSON.stringify(r));
  for (const b of breakdown) console.log(JSON.stringify(b));
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
