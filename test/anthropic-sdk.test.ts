/**
 * The official @anthropic-ai/sdk with `fetch: hedgedFetch` against Anthropic-compatible loopback
 * replicas (Messages API, SSE events) that flush 200 at once and then think.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { createHedgedFetch } from 'tailcut';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../packages/tailcut/test/support/wait.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** An Anthropic-compatible replica; `ttftMs` `Infinity` never answers. */
async function replica(name: string, ttftMs: number) {
  const state = { requests: 0, aborted: 0, keys: [] as unknown[] };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      state.requests++;
      state.keys.push(req.headers['x-api-key']);
      const body = JSON.parse(raw || '{}') as { stream?: boolean };
      const message = {
        id: `msg_${name}`,
        type: 'message',
        role: 'assistant',
        model: 'claude-test',
        content: [] as unknown[],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      };
      let timer: NodeJS.Timeout | undefined;
      const later = (fn: () => void) => {
        if (ttftMs !== Number.POSITIVE_INFINITY) timer = setTimeout(fn, ttftMs);
      };
      res.on('close', () => {
        if (!res.writableFinished) state.aborted++;
        clearTimeout(timer);
      });
      if (!body.stream) {
        later(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              ...message,
              content: [{ type: 'text', text: `hello from ${name}` }],
              stop_reason: 'end_turn',
            }),
          );
        });
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      const event = (type: string, data: object) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      // As Anthropic does: message_start, content_block_start and a ping at once, then the
      // model thinks (time to first token) before the first content_block_delta.
      res.write(event('message_start', { message }));
      res.write(
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      );
      res.write(event('ping', {}));
      later(() => {
        for (const t of ['hello', ' from', ` ${name}`]) {
          res.write(
            event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } }),
          );
        }
        res.write(event('content_block_stop', { index: 0 }));
        res.write(
          event('message_delta', {
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: 3 },
          }),
        );
        res.end(event('message_stop', {}));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const r = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(r);
  return r;
}

function client(origins: string[]) {
  const hedgedFetch = createHedgedFetch({
    routes: [
      {
        name: 'messages',
        match: { method: 'POST', path: '/v1/messages' },
        replicas: origins.map((origin, i) => ({ origin, headers: { 'x-api-key': `key-${i}` } })),
        idempotent: true,
        commitOn: 'first-token',
        hedge: { initialDelayMs: 50, minSamples: 1e6 },
      },
    ],
  });
  open.push(hedgedFetch);
  return {
    anthropic: new Anthropic({
      apiKey: 'callers-key',
      baseURL: origins[0],
      fetch: hedgedFetch as unknown as typeof fetch,
      maxRetries: 0,
    }),
    hedgedFetch,
  };
}

describe('@anthropic-ai/sdk with fetch: hedgedFetch', () => {
  it('streaming: the stalled replica is hedged, the SDK reads the winner’s events only', async () => {
    const slow = await replica('slow', Number.POSITIVE_INFINITY); // only the hedge can answer
    const fast = await replica('fast', 5);
    const { anthropic, hedgedFetch } = client([slow.origin, fast.origin]);
    const stream = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
        text += event.delta.text;
    }
    expect(text).toBe('hello from fast');
    expect(hedgedFetch.stats().routes.messages?.hedgesWon).toBe(1);
    // Each replica got its own key, never the caller's or the other replica's.
    expect(slow.state.keys).toEqual(['key-0']);
    expect(fast.state.keys).toEqual(['key-1']);
    await waitFor(() => slow.state.aborted === 1, { message: 'the stalled stream was closed' });
  });

  it('non-streaming, and an abort through the SDK closes every attempt', async () => {
    const slow = await replica('slow', Number.POSITIVE_INFINITY); // only the hedge can answer
    const fast = await replica('fast', 5);
    const { anthropic } = client([slow.origin, fast.origin]);
    const message = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'hello from fast' });
    const a = await replica('a', Number.POSITIVE_INFINITY);
    const b = await replica('b', Number.POSITIVE_INFINITY);
    const second = client([a.origin, b.origin]);
    const controller = new AbortController();
    const call = second.anthropic.messages.create(
      {
        model: 'claude-test',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      },
      { signal: controller.signal },
    );
    call.catch(() => {}); // awaited below
    // Abort once the primary and its hedge are both at the replicas.
    const requests = () => a.state.requests + b.state.requests;
    await waitFor(() => requests() === 2, {
      message: () => `primary and hedge at the replicas, saw ${requests()}`,
    });
    controller.abort();
    await expect(call).rejects.toThrow(/abort/i);
    await waitFor(() => a.state.aborted + b.state.aborted === 2, {
      message: () => `both attempts closed, saw ${a.state.aborted + b.state.aborted}`,
    });
    expect(requests()).toBe(2);
  });
});
