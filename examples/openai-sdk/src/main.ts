/**
 * The openai SDK with tailcut: streaming chat completions hedged on the time to first token.
 * Two local OpenAI-compatible replicas flush their headers at once and then think; each, on its
 * own, stalls 5% of its answers before the first token. The same calls go once through the
 * SDK's own fetch (round robin over the replicas) and once through `fetch: hedgedFetch` with
 * `commitOn: 'first-token'`, and the time to first token of both is printed side by side.
 *
 *   node examples/openai-sdk/dist/main.js
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createHedgedFetch } from 'tailcut';

const CALLS = Number(process.env.CALLS ?? 400);
const CONCURRENCY = 4;
const STALL_PROBABILITY = 0.05;
const STALL_MS = 600;

/** A seeded PRNG (mulberry32): each replica draws its stalls from its own sequence. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function fakeReplica(name: string, seed: number) {
  const random = rng(seed);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // Stalls are independent per replica: a hedge to the other replica rarely stalls too.
      const ttft = random() < STALL_PROBABILITY ? STALL_MS : 15 + random() * 10;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      // OpenAI's early events: a role-only delta before the first token (not a token).
      const chunk = (delta: object) =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'small', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
      res.write(chunk({ role: 'assistant', content: '' }));
      const timer = setTimeout(() => {
        for (const word of ['Hello', ' from', ` ${name}`]) res.write(chunk({ content: word }));
        res.end('data: [DONE]\n\n');
      }, ttft);
      res.on('close', () => clearTimeout(timer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const a = await fakeReplica('replica-a', 1);
const b = await fakeReplica('replica-b', 2);

const hedgedFetch = createHedgedFetch({
  routes: [
    {
      name: 'chat',
      match: { method: 'POST', path: '/v1/chat/completions' },
      replicas: [a.origin, b.origin],
      idempotent: true, // every attempt carries one Idempotency-Key
      commitOn: 'first-token', // the race is on the first generated token, not on the 200 or early events
      chunkTimeoutMs: 5_000, // a stream that stalls mid-way fails instead of hanging
      key: (req) => (JSON.parse(req.text() ?? '{}') as { model?: string }).model, // a delay per model
      hedge: { percentile: 90, initialDelayMs: 100, minSamples: 10 },
    },
  ],
  budget: { ratio: 0.1, minPerSecond: 5 },
});

// The baseURL names one replica (any of the route's replicas): tailcut matches the route by
// path, rewrites each attempt's origin to the replica it picks, and keeps path and query.
// tailcut already retries a failed attempt on another replica at once; keep the SDK's own
// retries for what tailcut cannot fix (the whole fleet overloaded), with its backoff.
const hedged = new OpenAI({
  apiKey: 'local',
  baseURL: `${a.origin}/v1`,
  fetch: hedgedFetch,
  maxRetries: 1,
});
// Without tailcut: the SDK's own fetch, round robin over the two replicas.
const plain = [a, b].map(
  (r) => new OpenAI({ apiKey: 'local', baseURL: `${r.origin}/v1`, maxRetries: 1 }),
);

/** Streams one completion; resolves with its time to first token, ms. */
async function ttft(client: OpenAI, model: string): Promise<number> {
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let first: number | undefined;
  for await (const chunk of stream) {
    if (first === undefined && chunk.choices[0]?.delta.content) first = performance.now() - started;
  }
  return first ?? Number.NaN;
}

// Four callers at once, each a call without tailcut, then one with it, in turn.
const without: number[] = [];
const withTailcut: number[] = [];
await Promise.all(
  Array.from({ length: CONCURRENCY }, async (_, worker) => {
    for (let i = worker; i < CALLS; i += CONCURRENCY) {
      without.push(await ttft(plain[i % 2] as OpenAI, 'small'));
      withTailcut.push(await ttft(hedged, 'small'));
    }
  }),
);

const pct = (v: number[], p: number) => {
  const s = [...v].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};
const row = (name: string, v: number[], extra: string) =>
  `${name.padEnd(28)}${[50, 90, 99].map((p) => `${pct(v, p).toFixed(0)} ms`.padStart(9)).join('')}${`${Math.max(...v).toFixed(0)} ms`.padStart(9)}  ${extra}`;
const s = hedgedFetch.stats().routes.chat;
console.log(
  `${CALLS} streamed completions each way, 4 at a time; 2 replicas, each stalls ${STALL_PROBABILITY * 100}% of first tokens by ${STALL_MS} ms\n`,
);
console.log(
  `${'time to first token'.padEnd(28)}${['p50', 'p90', 'p99', 'max'].map((h) => h.padStart(9)).join('')}  extra load`,
);
console.log(row('openai SDK, its own fetch', without, '0%'));
console.log(
  row(
    'openai SDK + tailcut',
    withTailcut,
    `+${(((s?.hedgesSent ?? 0) / CALLS) * 100).toFixed(0)}% (${s?.hedgesSent} hedges, ${s?.hedgesWon} won)`,
  ),
);
const small = s?.byKey.small;
console.log(
  `\np99: ${(pct(without, 99) / pct(withTailcut, 99)).toFixed(1)}x lower with tailcut; learned hedge delay for model "small": ${small?.delayMs.toFixed(0)} ms (stats().routes.chat.byKey, from ${small?.samples} samples)`,
);
await hedgedFetch.close();
a.server.close();
b.server.close();
