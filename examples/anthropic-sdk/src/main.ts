/**
 * The Anthropic SDK with tailcut: Messages API streams hedged on their first token, with an API
 * key per replica (region). Two local Anthropic-compatible regions flush their headers at once
 * and then think; each, on its own, stalls 5% of its answers before the first token. The same
 * calls go once through the SDK's own fetch (round robin over the regions, each with its key)
 * and once through `fetch: hedgedFetch`, and the time to first token of both is printed.
 *
 *   node examples/anthropic-sdk/dist/main.js
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { createHedgedFetch } from 'tailcut';

const CALLS = Number(process.env.CALLS ?? 400);
const CONCURRENCY = 4;
const STALL_PROBABILITY = 0.05;
const STALL_MS = 600;

/** A seeded PRNG (mulberry32): each region draws its stalls from its own sequence. */
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

async function fakeRegion(name: string, seed: number) {
  const random = rng(seed);
  const keys = new Set<string>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // This region's key, as its own header or as the SDK's bearer token.
      const key = String(
        req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, ''),
      );
      keys.add(key);
      const ttft = random() < STALL_PROBABILITY ? STALL_MS : 20 + random() * 10;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      const event = (type: string, data: object) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      // Anthropic's early events come at once; the first token (content_block_delta) later.
      const message = {
        id: 'msg',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      };
      res.write(event('message_start', { message }));
      res.write(
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      );
      res.write(event('ping', {}));
      const timer = setTimeout(() => {
        res.write(
          event('content_block_delta', {
            index: 0,
            delta: { type: 'text_delta', text: `Hello from ${name} (key ${key})` },
          }),
        );
        res.write(event('content_block_stop', { index: 0 }));
        res.write(
          event('message_delta', {
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: 5 },
          }),
        );
        res.end(event('message_stop', {}));
      }, ttft);
      res.on('close', () => clearTimeout(timer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, keys };
}

const east = await fakeRegion('us-east', 1);
const west = await fakeRegion('us-west', 2);

const hedgedFetch = createHedgedFetch({
  routes: [
    {
      name: 'messages',
      match: { method: 'POST', path: '/v1/messages' },
      // Each region has its own key; no attempt ever carries the other region's.
      replicas: [
        { origin: east.origin, name: 'us-east', headers: { 'x-api-key': 'key-east' } },
        { origin: west.origin, name: 'us-west', headers: { 'x-api-key': 'key-west' } },
      ],
      idempotent: true,
      commitOn: 'first-token', // message_start, content_block_start and ping do not decide the race
      hedge: { percentile: 90, initialDelayMs: 100, minSamples: 10 },
    },
  ],
  budget: { ratio: 0.1, minPerSecond: 5 },
});

// The SDK's apiKey is replaced per region by the replicas' headers.
const hedged = new Anthropic({
  apiKey: 'unused',
  baseURL: east.origin,
  fetch: hedgedFetch,
  maxRetries: 1,
});
// Without tailcut: the SDK's own fetch, round robin over the regions, each with its own key.
const plain = [
  new Anthropic({ apiKey: 'key-east', baseURL: east.origin, maxRetries: 1 }),
  new Anthropic({ apiKey: 'key-west', baseURL: west.origin, maxRetries: 1 }),
];

/** Streams one message; resolves with its time to first token, ms. */
async function ttft(client: Anthropic): Promise<number> {
  const started = performance.now();
  const stream = await client.messages.create({
    model: 'claude',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let first: number | undefined;
  for await (const event of stream) {
    if (first === undefined && event.type === 'content_block_delta') {
      first = performance.now() - started;
    }
  }
  return first ?? Number.NaN;
}

// Four callers at once, each a call without tailcut, then one with it, in turn.
const without: number[] = [];
const withTailcut: number[] = [];
await Promise.all(
  Array.from({ length: CONCURRENCY }, async (_, worker) => {
    for (let i = worker; i < CALLS; i += CONCURRENCY) {
      without.push(await ttft(plain[i % 2] as Anthropic));
      withTailcut.push(await ttft(hedged));
    }
  }),
);

const pct = (v: number[], p: number) => {
  const sorted = [...v].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};
const row = (name: string, v: number[], extra: string) =>
  `${name.padEnd(28)}${[50, 90, 99].map((p) => `${pct(v, p).toFixed(0)} ms`.padStart(9)).join('')}${`${Math.max(...v).toFixed(0)} ms`.padStart(9)}  ${extra}`;
const s = hedgedFetch.stats().routes.messages;
console.log(
  `${CALLS} streamed messages each way, 4 at a time; 2 regions, each stalls ${STALL_PROBABILITY * 100}% of first tokens by ${STALL_MS} ms\n`,
);
console.log(
  `${'time to first token'.padEnd(28)}${['p50', 'p90', 'p99', 'max'].map((h) => h.padStart(9)).join('')}  extra load`,
);
console.log(row('Anthropic SDK, its own fetch', without, '0%'));
console.log(
  row(
    'Anthropic SDK + tailcut',
    withTailcut,
    `+${(((s?.hedgesSent ?? 0) / CALLS) * 100).toFixed(0)}% (${s?.hedgesSent} hedges, ${s?.hedgesWon} won)`,
  ),
);
const won = Object.entries(s?.replicas ?? {})
  .map(([name, r]) => `${name} ${r.won}`)
  .join(', ');
console.log(
  `\np99: ${(pct(without, 99) / pct(withTailcut, 99)).toFixed(1)}x lower with tailcut; learned hedge delay ${s?.delayMs.toFixed(0)} ms; calls won: ${won}`,
);
console.log(
  `keys seen: us-east ${[...east.keys].join(', ')}; us-west ${[...west.keys].join(', ')}`,
);
await hedgedFetch.close();
east.server.close();
west.server.close();
