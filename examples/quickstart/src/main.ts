/**
 * tailcut quickstart: two local replicas, one with a slow tail. The same open-loop stream of
 * calls goes through bare undici.fetch and through createHedgedFetch, interleaved in one run,
 * and the latency percentiles of both are printed side by side.
 */
import { createHedgedFetch } from 'tailcut';
import { Agent, fetch } from 'undici';
import { startReplica } from './replicas.js';

const RATE_PER_SECOND = 100;
const CALLS = Number(process.env.QUICKSTART_CALLS ?? 800);

const fast = await startReplica(
  'a',
  { medianMs: 15, sigma: 0.3, stallProbability: 0, stallFactor: 1 },
  1,
);
const slowTail = await startReplica(
  'b',
  { medianMs: 15, sigma: 0.3, stallProbability: 0.05, stallFactor: 15 },
  2,
);
const replicas = [fast.origin, slowTail.origin];

// The hedged client: route GET /v1/* to both replicas, hedge at the route's recent p95.
const hedgedFetch = createHedgedFetch({
  routes: [
    {
      name: 'embeddings',
      match: { method: 'GET', path: '/v1/*' },
      replicas,
      hedge: { percentile: 95, maxAttempts: 2, initialDelayMs: 50, minSamples: 20 },
    },
  ],
  budget: { ratio: 0.1, minPerSecond: 10 },
});
const bare = new Agent();

/** One call; latency from its intended send time (open loop: no coordinated omission). */
async function timed(intended: number, call: () => Promise<Response>): Promise<number> {
  const res = await call();
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`status ${res.status}`);
  return performance.now() - intended;
}

const bareMs: number[] = [];
const hedgedMs: number[] = [];
const pending: Promise<void>[] = [];
const start = performance.now() + 20;
console.log(
  `tailcut quickstart: replicas a (healthy) and b (5% of answers 15x slower), ${CALLS} calls each way at ${RATE_PER_SECOND}/s\n`,
);
for (let i = 0; i < CALLS; i++) {
  const intended = start + (i * 1000) / RATE_PER_SECOND;
  const wait = intended - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  // Bare: round robin over the replicas, as a client-side load balancer would.
  const target = `${replicas[i % 2]}/v1/embeddings?i=${i}`;
  pending.push(
    timed(intended, () => fetch(target, { dispatcher: bare }) as unknown as Promise<Response>).then(
      (ms) => void bareMs.push(ms),
    ),
    timed(intended, () => hedgedFetch(`${replicas[0]}/v1/embeddings?i=${i}`)).then(
      (ms) => void hedgedMs.push(ms),
    ),
  );
}
await Promise.all(pending);

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}
const fmt = (ms: number) => `${ms.toFixed(1)} ms`.padStart(10);
const row = (name: string, v: number[], extra: string) =>
  `${name.padEnd(22)}${[50, 95, 99].map((p) => fmt(pct(v, p))).join('')}${fmt(Math.max(...v))}  ${extra}`;

const s = hedgedFetch.stats().routes.embeddings;
const extraLoad = s ? (s.hedgesSent / s.calls) * 100 : 0;
console.log(
  `${''.padEnd(22)}${['p50', 'p95', 'p99', 'max'].map((h) => h.padStart(10)).join('')}  extra load`,
);
console.log(row('bare undici.fetch', bareMs, '0%'));
console.log(
  row(
    'tailcut hedgedFetch',
    hedgedMs,
    `+${extraLoad.toFixed(1)}% (${s?.hedgesSent} hedges, ${s?.hedgesWon} won)`,
  ),
);
console.log(
  `\np99: ${(pct(bareMs, 99) / pct(hedgedMs, 99)).toFixed(1)}x lower with tailcut; learned hedge delay ${s?.delayMs.toFixed(1)} ms`,
);

await hedgedFetch.close();
await bare.close();
await fast.close();
await slowTail.close();
