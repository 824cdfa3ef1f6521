/**
 * Runs the inference gateway against three local fake replicas (one with a slow tail) and a
 * steady load, and prints where to look: the gateway, its /metrics, and every 5 s the tail of
 * each route through the gateway (tailcut) beside the same calls sent straight to the replicas
 * (round robin, no hedging).
 *
 *   node examples/inference-gateway/dist/main.js [seconds]   (default: until Ctrl-C)
 *
 * Environment: METRICS_PORT (default 9464; 0 for any free port), RATE (calls/s, default 50).
 */
import { startFakeReplica } from './fleet.js';
import { startGateway, startLoad } from './gateway.js';

/** A setting read from the environment or the command line, or one clear line and exit 1. */
function setting(
  name: string,
  raw: string | undefined,
  fallback: number,
  valid: (n: number) => boolean,
  rule: string,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw.trim() === '' || !valid(n)) {
    console.error(`inference-gateway: ${name} must be ${rule}; got ${JSON.stringify(raw)}`);
    process.exit(1);
  }
  return n;
}
const seconds = setting(
  'the run time (first argument, s)',
  process.argv[2],
  0,
  (n) => n >= 0 && Number.isFinite(n),
  'a number of seconds ≥ 0 (0: until Ctrl-C)',
);
const metricsPort = setting(
  'METRICS_PORT',
  process.env.METRICS_PORT,
  9464,
  (n) => Number.isInteger(n) && n >= 0 && n <= 65535,
  'a port 0..65535 (0: any free port)',
);
const rate = setting(
  'RATE',
  process.env.RATE,
  50,
  (n) => n > 0 && n <= 10_000,
  'calls per second, > 0 and ≤ 10,000',
);
const profile = { medianMs: 20, sigma: 0.4, stallProbability: 0.01, stallFactor: 10 };
const replicas = await Promise.all([
  startFakeReplica('r1', profile, 1),
  startFakeReplica('r2', profile, 2),
  startFakeReplica('r3', { ...profile, stallProbability: 0.08 }, 3),
]);
const gateway = await startGateway({ replicas: replicas.map((r) => r.origin), metricsPort }).catch(
  (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EADDRINUSE') throw err;
    console.error(
      `inference-gateway: port ${metricsPort} (METRICS_PORT) is taken; run with another, e.g. METRICS_PORT=${metricsPort + 1}, or METRICS_PORT=0 for any free port`,
    );
    process.exit(1);
  },
);
const load = startLoad(gateway.url, rate);
console.log(`gateway  ${gateway.url} (POST /chat, POST /embed), ${rate} calls/s`);
console.log(
  `metrics  ${gateway.metricsUrl}  (scrape it with Prometheus; dashboard in examples/dashboards)`,
);

// The same mix of calls, straight to the replicas in turn, without tailcut: the baseline, over
// the last 30 s as the route's figures are (its hedge.windowMs).
const direct = { chat: [] as [number, number][], embeddings: [] as [number, number][] };
let i = 0;
const baseline = setInterval(() => {
  const chat = i % 3 === 0;
  const stream = i % 6 === 0; // as the load: half the chat calls streamed
  const origin = replicas[i++ % replicas.length]?.origin;
  const started = performance.now();
  fetch(`${origin}/v1/${chat ? 'chat/completions' : 'embeddings'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake', stream }),
  })
    .then((r) => r.arrayBuffer())
    .then(() => {
      const now = performance.now();
      const list = chat ? direct.chat : direct.embeddings;
      list.push([now, now - started]);
      while ((list[0]?.[0] ?? now) < now - 30_000) list.shift();
    })
    .catch(() => {});
}, 1000 / rate);
const p99 = (v: [number, number][]) =>
  v.map(([, ms]) => ms).sort((x, y) => x - y)[Math.ceil(v.length * 0.99) - 1] ?? 0;

const report = setInterval(() => {
  for (const [name, s] of Object.entries(gateway.stats().routes)) {
    const bare = p99(direct[name as keyof typeof direct] ?? []);
    console.log(
      `${name.padEnd(11)} calls ${s.calls}  hedged ${s.hedgesSent} (won ${s.hedgesWon}, refused ${s.hedgesDeniedBudget})  delay ${s.delayMs.toFixed(1)} ms  p50 ${s.latency.p50.toFixed(1)} ms  p99 ${s.latency.p99.toFixed(1)} ms, without tailcut ${bare.toFixed(1)} ms (${(bare / s.latency.p99).toFixed(1)}x)`,
    );
  }
}, 5000);

const stop = async () => {
  clearInterval(report);
  clearInterval(baseline);
  load.stop();
  await gateway.close();
  await Promise.all(replicas.map((r) => r.close()));
  process.exit(0);
};
process.once('SIGINT', stop);
if (seconds > 0) setTimeout(stop, seconds * 1000);
