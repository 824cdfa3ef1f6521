/**
 * tailcut batch example: 10,000 embedding inputs, 32 in flight at a time (p-limit), against three
 * loopback fake embedding replicas (a child process), a few of whose answers stall. The batch runs twice on the same
 * fleet and seed, first with bare undici.fetch (round robin over the replicas), then through
 * createHedgedFetch, and prints the batch's makespan and per-call percentiles side by side: with
 * a bounded concurrency, every stalled call holds a slot, and the slowest calls decide when the
 * batch ends.
 */
import pLimit from 'p-limit';
import { createHedgedFetch } from 'tailcut';
import { Agent, fetch } from 'undici';
import { type Profile, startFleet } from './replicas.js';

const INPUTS = Number(process.env.BATCH_INPUTS ?? 10_000);
const CONCURRENCY = 32;
const PROFILE: Profile = { medianMs: 20, sigma: 0.3, stallProbability: 0.02, stallMs: 500 };
const SEED = 1;

type Call = (origin: string, i: number, init: RequestInit) => Promise<Response>;

interface BatchResult {
  makespanMs: number;
  latencies: number[];
  extra: string;
}

/** One batch on a fresh fleet (same profile and seeds each time): every input embedded once. */
async function batch(
  make: (replicas: string[]) => { call: Call; extra: () => string; close: () => Promise<void> },
): Promise<BatchResult> {
  const fleet = await startFleet(PROFILE, SEED);
  const replicas = fleet.origins;
  const client = make(replicas);
  const limit = pLimit(CONCURRENCY);
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: INPUTS }, (_, i) =>
      limit(async () => {
        const t0 = performance.now();
        const res = await client.call(replicas[i % replicas.length] as string, i, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'embed-small', input: `document ${i}` }),
        });
        if (!res.ok) throw new Error(`input ${i}: status ${res.status}`);
        const { data } = (await res.json()) as { data: { embedding: number[] }[] };
        if (data[0]?.embedding.length !== 8) throw new Error(`input ${i}: no embedding`);
        latencies.push(performance.now() - t0);
      }),
    ),
  );
  const makespanMs = performance.now() - started;
  const extra = client.extra();
  await client.close();
  await fleet.close();
  return { makespanMs, latencies, extra };
}

console.log(
  `tailcut batch: ${INPUTS.toLocaleString('en-US')} embedding inputs, ${CONCURRENCY} at a time (p-limit), 3 loopback replicas`,
);
console.log(
  `(median ${PROFILE.medianMs} ms; ${PROFILE.stallProbability * 100}% of answers stall ${PROFILE.stallMs} ms more), same fleet and seed both ways\n`,
);

// Bare: round robin over the replicas, as a client-side load balancer would.
const bare = await batch(() => {
  const agent = new Agent();
  return {
    call: (origin, i, init) =>
      fetch(`${origin}/v1/embeddings?i=${i}`, {
        ...init,
        dispatcher: agent,
      } as never) as unknown as Promise<Response>,
    extra: () => '0%',
    close: () => agent.close(),
  };
});

// Hedged: the same calls through createHedgedFetch, hedging at the route's recent p95.
const hedged = await batch((replicas) => {
  const hedgedFetch = createHedgedFetch({
    routes: [
      {
        name: 'embeddings',
        match: { method: 'POST', path: '/v1/embeddings' },
        replicas,
        idempotent: true, // an embedding may be computed twice
        hedge: { percentile: 95, maxAttempts: 2 },
      },
    ],
    budget: { ratio: 0.1, minPerSecond: 10 },
  });
  return {
    call: (origin, i, init) => hedgedFetch(`${origin}/v1/embeddings?i=${i}`, init),
    extra: () => {
      const s = hedgedFetch.stats().routes.embeddings;
      if (!s) return '';
      return `+${((s.hedgesSent / s.calls) * 100).toFixed(1)}% (${s.hedgesSent} hedges, ${s.hedgesWon} won)`;
    },
    close: () => hedgedFetch.close(),
  };
});

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}
const ms = (v: number) => `${v.toFixed(1)} ms`.padStart(10);
const row = (name: string, r: BatchResult) =>
  `${name.padEnd(21)}${`${(r.makespanMs / 1000).toFixed(2)} s`.padStart(10)}${[50, 99, 99.9].map((p) => ms(pct(r.latencies, p))).join('')}${ms(Math.max(...r.latencies))}  ${r.extra}`;

console.log(
  `${''.padEnd(21)}${['makespan', 'p50', 'p99', 'p99.9', 'max'].map((h) => h.padStart(10)).join('')}  extra load`,
);
console.log(row('bare undici.fetch', bare));
console.log(row('tailcut hedgedFetch', hedged));
const shorter = (1 - hedged.makespanMs / bare.makespanMs) * 100;
console.log(
  `\nwith tailcut: the batch ends ${shorter.toFixed(0)}% sooner (${(bare.makespanMs / 1000).toFixed(2)} s -> ${(hedged.makespanMs / 1000).toFixed(2)} s), p99 ${(pct(bare.latencies, 99) / pct(hedged.latencies, 99)).toFixed(1)}x lower`,
);
