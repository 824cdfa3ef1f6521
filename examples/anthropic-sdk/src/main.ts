/**
 * The Anthropic SDK with tailcut: Messages API streams hedged on their first event, with an API
 * key per replica (region). Two local Anthropic-compatible replicas flush their headers at once
 * and then think; one sometimes stalls before its first event.
 *
 *   node examples/anthropic-sdk/dist/main.js
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { createHedgedFetch } from 'tailcut';

async function fakeRegion(name: string, stallEvery: number) {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = req.headers['x-api-key'];
      const ttft = ++n % stallEvery === 0 ? 800 : 20 + Math.random() * 10;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      const event = (type: string, data: object) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      const timer = setTimeout(() => {
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
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const east = await fakeRegion('us-east', 5);
const west = await fakeRegion('us-west', 7);

const hedgedFetch = createHedgedFetch({
  routes: [
    {
      name: 'messages',
      match: { method: 'POST', path: '/v1/messages' },
      // Each region has its own key; no attempt ever carries the other region's.
      replicas: [
        { origin: east.origin, headers: { 'x-api-key': 'key-east' } },
        { origin: west.origin, headers: { 'x-api-key': 'key-west' } },
      ],
      idempotent: true,
      commitOn: 'first-token',
      hedge: { percentile: 90, initialDelayMs: 100, minSamples: 10 },
    },
  ],
  budget: { ratio: 0.1, minPerSecond: 5 },
});

const anthropic = new Anthropic({
  apiKey: 'unused',
  baseURL: east.origin,
  fetch: hedgedFetch,
  maxRetries: 1,
});

for (let i = 0; i < 12; i++) {
  const started = performance.now();
  const stream = await anthropic.messages.create({
    model: 'claude',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  for await (const event of stream) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
      console.log(
        `${(performance.now() - started).toFixed(0).padStart(4)} ms  ${event.delta.text}`,
      );
    }
  }
}
const s = hedgedFetch.stats().routes.messages;
console.log(`hedges sent ${s?.hedgesSent}, won ${s?.hedgesWon}`);
await hedgedFetch.close();
east.server.close();
west.server.close();
