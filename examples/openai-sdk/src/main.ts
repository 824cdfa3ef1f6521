/**
 * The openai SDK with tailcut: streaming chat completions hedged on the time to first token.
 * Two local OpenAI-compatible replicas flush their headers at once and then think; one of them
 * sometimes stalls before its first token. With `commitOn: 'first-token'`, a stalled stream is
 * hedged and the SDK reads the winner's stream only.
 *
 *   node examples/openai-sdk/dist/main.js
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createHedgedFetch } from 'tailcut';

async function fakeReplica(name: string, stallEvery: number) {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const ttft = ++n % stallEvery === 0 ? 800 : 15 + Math.random() * 10;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      const timer = setTimeout(() => {
        for (const word of ['Hello', ' from', ` ${name}`]) {
          const chunk = {
            id: 'c',
            object: 'chat.completion.chunk',
            created: 0,
            model: 'm',
            choices: [{ index: 0, delta: { content: word }, finish_reason: null }],
          };
          res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        }
        res.end('data: [DONE]\n\n');
      }, ttft);
      res.on('close', () => clearTimeout(timer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const a = await fakeReplica('replica-a', 5);
const b = await fakeReplica('replica-b', 7);

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

// tailcut already retries a failed attempt on another replica at once; keep the SDK's own
// retries for what tailcut cannot fix (the whole fleet overloaded), with its backoff.
const openai = new OpenAI({
  apiKey: 'local',
  baseURL: `${a.origin}/v1`,
  fetch: hedgedFetch,
  maxRetries: 1,
});

const ttft: number[] = [];
for (let i = 0; i < 40; i++) {
  const started = performance.now();
  const stream = await openai.chat.completions.create({
    model: 'small',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let first = true;
  for await (const chunk of stream) {
    if (first && chunk.choices[0]?.delta.content) {
      ttft.push(performance.now() - started);
      first = false;
    }
  }
}
ttft.sort((x, y) => x - y);
const s = hedgedFetch.stats().routes.chat;
console.log(
  `40 streamed completions: time to first token p50 ${ttft[20]?.toFixed(0)} ms, max ${ttft.at(-1)?.toFixed(0)} ms`,
);
console.log(
  `hedges sent ${s?.hedgesSent}, won ${s?.hedgesWon}; models with a delay of their own: ${s?.keys}`,
);
await hedgedFetch.close();
a.server.close();
b.server.close();
