/**
 * The official openai SDK (v6) with `fetch: hedgedFetch` against OpenAI-compatible loopback
 * replicas that flush their 200 headers at once and then think (time to first token), as
 * inference servers do, with their early events (a comment and a role-only delta) sent at once.
 * With commitOn: 'first-token' the race is decided on the first generated token, not on those
 * early events, and the SDK sees one stream, from one replica, never interleaved.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createHedgedFetch, type HedgedFetch } from 'tailcut';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../packages/tailcut/test/support/wait.js';

interface Replica {
  origin: string;
  requests: number;
  aborted: number;
  close(): Promise<void>;
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/**
 * An OpenAI-compatible replica: `ttftMs(n)` before the first token of its n-th request;
 * `Infinity` never answers (until the client gives up on the request).
 */
async function replica(
  name: string,
  ttftMs: (n: number) => number,
  status = 200,
): Promise<Replica> {
  const state = { requests: 0, aborted: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const n = state.requests++;
      const body = JSON.parse(raw || '{}') as { stream?: boolean; tools?: unknown[] };
      const timers: NodeJS.Timeout[] = [];
      const later = (fn: () => void, ms: number) => {
        if (ms !== Number.POSITIVE_INFINITY) timers.push(setTimeout(fn, ms));
      };
      res.on('close', () => {
        if (!res.writableFinished) state.aborted++;
        for (const t of timers) clearTimeout(t);
      });
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
        return;
      }
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: `chatcmpl-${name}`, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // As OpenAI-compatible servers do: a comment and a role-only delta at once, then the
        // model thinks (time to first token).
        res.write(': processing\n\n');
        res.write(chunk({ role: 'assistant', content: '' }));
        later(() => {
          if (body.tools) {
            res.write(
              chunk({
                tool_calls: [
                  {
                    index: 0,
                    id: 'call_1',
                    type: 'function',
                    function: { name: 'lookup', arguments: '' },
                  },
                ],
              }),
            );
            res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }));
            res.write(
              chunk(
                { tool_calls: [{ index: 0, function: { arguments: `"${name}"}` } }] },
                'tool_calls',
              ),
            );
          } else {
            for (const word of ['hello', ' from', ` ${name}`]) res.write(chunk({ content: word }));
            res.write(chunk({}, 'stop'));
          }
          res.end('data: [DONE]\n\n');
        }, ttftMs(n));
        return;
      }
      later(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: `chatcmpl-${name}`,
            object: 'chat.completion',
            created: 1,
            model: 'm',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: `hello from ${name}` },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
          }),
        );
      }, ttftMs(n));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const r: Replica = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get requests() {
      return state.requests;
    },
    get aborted() {
      return state.aborted;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(r);
  return r;
}

function sdk(replicas: Replica[], maxRetries = 0): { client: OpenAI; hedgedFetch: HedgedFetch } {
  const hedgedFetch = createHedgedFetch({
    routes: [
      {
        name: 'chat',
        match: { method: 'POST', path: '/v1/chat/completions' },
        replicas: replicas.map((r) => r.origin),
        idempotent: true,
        commitOn: 'first-token',
        hedge: { initialDelayMs: 50, minSamples: 1e6 },
      },
    ],
  });
  open.push(hedgedFetch);
  const client = new OpenAI({
    apiKey: 'test-key',
    baseURL: `${replicas[0]?.origin}/v1`,
    fetch: hedgedFetch as unknown as typeof fetch,
    maxRetries,
  });
  return { client, hedgedFetch };
}

const messages = [{ role: 'user' as const, content: 'hi' }];

describe('openai SDK v6 with fetch: hedgedFetch', () => {
  it('streaming: a stalled first token is hedged; the SDK gets one stream from one replica', async () => {
    // The slow replica never sends its first token: only the hedge can answer.
    const slow = await replica('slow', () => Number.POSITIVE_INFINITY);
    const fast = await replica('fast', () => 5);
    const { client, hedgedFetch } = sdk([slow, fast]);
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta.content ?? '';
    expect(text).toBe('hello from fast');
    expect(hedgedFetch.stats().routes.chat).toMatchObject({ hedgesSent: 1, hedgesWon: 1 });
    await waitFor(() => slow.aborted === 1, { message: 'the stalled stream was closed' });
    expect(slow.requests).toBe(1);
  });

  it('non-streaming calls hedge too', async () => {
    const slow = await replica('slow', () => Number.POSITIVE_INFINITY);
    const fast = await replica('fast', () => 5);
    const { client } = sdk([slow, fast]);
    const completion = await client.chat.completions.create({ model: 'm', messages });
    expect(completion.choices[0]?.message.content).toBe('hello from fast');
  });

  it('tool-call chunks arrive whole, from the winner only', async () => {
    const slow = await replica('slow', () => Number.POSITIVE_INFINITY);
    const fast = await replica('fast', () => 5);
    const { client } = sdk([slow, fast]);
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    let args = '';
    for await (const part of stream)
      args += part.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    expect(JSON.parse(args)).toEqual({ q: 'fast' });
  });

  it('an abort through the SDK rejects and closes every attempt', async () => {
    const a = await replica('a', () => Number.POSITIVE_INFINITY);
    const b = await replica('b', () => Number.POSITIVE_INFINITY);
    const { client } = sdk([a, b]);
    const controller = new AbortController();
    const call = client.chat.completions.create(
      { model: 'm', messages, stream: true },
      { signal: controller.signal },
    );
    call.catch(() => {}); // awaited below
    // Abort once the primary and its hedge are both at the replicas.
    await waitFor(() => a.requests + b.requests === 2, {
      message: () => `primary and hedge at the replicas, saw ${a.requests + b.requests}`,
    });
    controller.abort();
    await expect(call).rejects.toThrow(/abort/i);
    await waitFor(() => a.aborted + b.aborted === 2, {
      message: () => `both attempts closed, saw ${a.aborted + b.aborted}`,
    });
    expect(a.requests + b.requests).toBe(2);
  });

  it('the SDK’s own retries come after tailcut’s: each is a new hedged call', async () => {
    const a = await replica('a', () => 1, 503);
    const b = await replica('b', () => 1, 503);
    const { client, hedgedFetch } = sdk([a, b], 1);
    await expect(client.chat.completions.create({ model: 'm', messages })).rejects.toThrow();
    // Two calls (the SDK's first try and its one retry), each: a 503, then the other replica at once.
    expect(hedgedFetch.stats().routes.chat?.calls).toBe(2);
    expect(a.requests + b.requests).toBe(4);
  });
});
