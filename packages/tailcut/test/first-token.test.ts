import type { ServerResponse } from 'node:http';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import type { HedgedFetchOptions, RouteOptions } from '../src/index.js';
import { classifyEvent } from '../src/stream/events.js';
import { TokenWatch } from '../src/stream/token-watch.js';
import { adapters, openClient } from './support/adapters.js';
import { serve } from './support/replica.js';
import { waitFor } from './support/wait.js';

const sse = (data: unknown, event?: string) =>
  `${event === undefined ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** What OpenAI-compatible servers send at once, before the model produces anything. */
const OPENAI_EARLY =
  `: processing\n\n` +
  sse({
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { role: 'assistant', content: '' } }],
  });
const openaiToken = (text: string) =>
  sse({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] });

/** What Anthropic sends at once: message_start, content_block_start, ping. */
const ANTHROPIC_EARLY =
  sse({ type: 'message_start', message: { id: 'msg_1', content: [] } }, 'message_start') +
  sse(
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    'content_block_start',
  ) +
  sse({ type: 'ping' }, 'ping');
const anthropicToken = (text: string) =>
  sse(
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
    'content_block_delta',
  );

describe('recognising output events', () => {
  const ev = (data: unknown, event?: string) => ({
    format: 'sse' as const,
    event,
    data: typeof data === 'string' ? data : JSON.stringify(data),
  });

  it('OpenAI Chat Completions: content, tool calls, refusal, reasoning; not role-only or empty', () => {
    const chunk = (delta: unknown) => ev({ choices: [{ index: 0, delta }] });
    expect(classifyEvent(chunk({ role: 'assistant', content: '' }))).toBe('other');
    expect(classifyEvent(chunk({ role: 'assistant' }))).toBe('other');
    expect(classifyEvent(chunk({ content: 'Hi' }))).toBe('token');
    expect(classifyEvent(chunk({ tool_calls: [{ index: 0, function: { arguments: '' } }] }))).toBe(
      'token',
    );
    expect(classifyEvent(chunk({ refusal: 'no' }))).toBe('token');
    expect(classifyEvent(chunk({ reasoning_content: 'hmm' }))).toBe('token');
    expect(classifyEvent(ev({ choices: [] }))).toBe('other'); // usage-only chunk
    expect(classifyEvent(ev('[DONE]'))).toBe('other');
    expect(classifyEvent(ev({ error: { message: 'overloaded' } }))).toBe('error');
  });

  it('OpenAI Responses API: deltas are output; created and in_progress are not', () => {
    const t = (type: string, extra = {}) => ev({ type, ...extra }, type);
    expect(classifyEvent(t('response.created'))).toBe('other');
    expect(classifyEvent(t('response.in_progress'))).toBe('other');
    expect(classifyEvent(t('response.output_item.added'))).toBe('other');
    expect(classifyEvent(t('response.output_text.delta', { delta: 'Hi' }))).toBe('token');
    expect(classifyEvent(t('response.function_call_arguments.delta', { delta: '{' }))).toBe(
      'token',
    );
    expect(classifyEvent(t('response.reasoning_summary_text.delta', { delta: 'x' }))).toBe('token');
    expect(classifyEvent(t('response.failed'))).toBe('error');
    expect(classifyEvent(t('error', { message: 'x' }))).toBe('error');
  });

  it('Anthropic Messages: content_block_delta of any kind; not start events or pings', () => {
    for (const type of ['message_start', 'content_block_start', 'ping', 'message_delta']) {
      expect(classifyEvent(ev({ type }, type))).toBe('other');
    }
    for (const delta of [
      { type: 'text_delta', text: 'Hi' },
      { type: 'input_json_delta', partial_json: '{' },
      { type: 'thinking_delta', thinking: 'x' },
    ]) {
      expect(classifyEvent(ev({ type: 'content_block_delta', delta }, 'content_block_delta'))).toBe(
        'token',
      );
    }
    expect(classifyEvent(ev({ type: 'error', error: { type: 'overloaded_error' } }, 'error'))).toBe(
      'error',
    );
  });

  it('NDJSON (Ollama): message content or response text', () => {
    const line = (o: unknown) => ({
      format: 'ndjson' as const,
      event: undefined,
      data: JSON.stringify(o),
    });
    expect(classifyEvent(line({ message: { role: 'assistant', content: '' }, done: false }))).toBe(
      'other',
    );
    expect(classifyEvent(line({ message: { role: 'assistant', content: 'Hi' } }))).toBe('token');
    expect(classifyEvent(line({ response: 'Hi', done: false }))).toBe('token');
    expect(classifyEvent(line({ done: true }))).toBe('other');
    expect(classifyEvent(line({ error: 'model not found' }))).toBe('error');
  });

  it('frames SSE and NDJSON across chunk boundaries, multi-byte characters included', () => {
    const watch = TokenWatch.for('text/event-stream; charset=utf-8', classifyEvent);
    const bytes = new TextEncoder().encode(
      OPENAI_EARLY + openaiToken('héllo ✓') + openaiToken('!'),
    );
    let tokens = 0;
    for (let i = 0; i < bytes.length; i += 3)
      tokens += watch?.feed(bytes.subarray(i, i + 3)).tokens ?? 0;
    expect(tokens).toBe(2);
    const nd = TokenWatch.for('application/x-ndjson', classifyEvent);
    const lines = new TextEncoder().encode(
      `${JSON.stringify({ message: { content: '' } })}\n${JSON.stringify({ message: { content: 'é' } })}\n`,
    );
    let ndTokens = 0;
    for (let i = 0; i < lines.length; i += 5)
      ndTokens += nd?.feed(lines.subarray(i, i + 5)).tokens ?? 0;
    expect(ndTokens).toBe(1);
    expect(TokenWatch.for('application/json', classifyEvent)).toBeUndefined();
  });
});

/**
 * A streaming replica the test scripts: `onRequest(n, res)` gets each request's response with
 * the SSE headers sent; the test writes events when it wants.
 */
async function streamer(
  onRequest: (n: number, res: ServerResponse) => void,
  type = 'text/event-stream',
) {
  let n = 0;
  const responses: ServerResponse[] = [];
  const s = await serve((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': type });
    res.flushHeaders();
    responses.push(res);
    onRequest(n++, res);
  });
  open.push(s);
  return { ...s, responses, count: () => n };
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

let adapter = adapters[0] as (typeof adapters)[number];

/** A client of the adapter under test, closed after the test. */
const client = (options: HedgedFetchOptions) => openClient(adapter, options, open);

function route(replicas: string[], extra: Partial<RouteOptions> = {}): RouteOptions {
  return {
    name: 'chat',
    replicas,
    idempotent: true,
    commitOn: 'first-token',
    hedge: { initialDelayMs: 100, minSamples: 1_000_000 },
    ...extra,
  };
}

const post = {
  method: 'POST',
  body: '{"stream":true}',
  headers: { 'content-type': 'application/json' },
};

describe.each(adapters)('$name: commitOn first-token', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  for (const [flavour, early, token] of [
    ['OpenAI', OPENAI_EARLY, openaiToken],
    ['Anthropic', ANTHROPIC_EARLY, anthropicToken],
  ] as const) {
    it(`${flavour}: early events do not decide the race; the first token does, and the caller gets the winner's bytes exactly`, async () => {
      // Both replicas send their early events at once; the primary then stalls before its
      // first token, the backup answers its first token as soon as it is asked.
      const sent: string[] = ['', ''];
      const write = (i: number, res: ServerResponse, text: string) => {
        sent[i] += text;
        res.write(text);
      };
      const slow = await streamer((_n, res) => write(0, res, early));
      const fast = await streamer((_n, res) => {
        write(1, res, early);
        write(1, res, token('Hello'));
        write(1, res, token(' world'));
        res.end();
      });
      const clock = new VirtualClock();
      const f = client({
        routes: [route([slow.origin, fast.origin])],
        budget: { ratio: 1, minPerSecond: 0 },
        clock,
      });
      const pending = f(`${slow.origin}/v1/chat`, post);
      await waitFor(() => slow.count() === 1);
      // Give the early events time to arrive: they must not commit the primary.
      await new Promise((r) => setTimeout(r, 20));
      await clock.advance(100);
      const res = await pending;
      expect(await res.text()).toBe(sent[1]);
      expect(f.stats().routes.chat).toMatchObject({ hedgesSent: 1, hedgesWon: 1 });
      await waitFor(() => slow.responses[0]?.destroyed === true, {
        message: 'the loser was cancelled',
      });
    });
  }

  it('with first-byte the same early events commit to the stalled primary (what first-token fixes)', async () => {
    const slow = await streamer((_n, res) => res.write(OPENAI_EARLY));
    const fast = await streamer((_n, res) => res.end(OPENAI_EARLY + openaiToken('Hi')));
    const clock = new VirtualClock();
    const f = client({
      routes: [route([slow.origin, fast.origin], { commitOn: 'first-byte' })],
      budget: { ratio: 1, minPerSecond: 0 },
      clock,
    });
    const res = await f(`${slow.origin}/v1/chat`, post);
    await clock.advance(100);
    expect(fast.count()).toBe(0);
    expect(f.stats().routes.chat?.hedgesSent).toBe(0);
    await res.body?.cancel();
  });

  it('an error event before the first token fails the attempt: the next one starts at once', async () => {
    const failing = await streamer((_n, res) =>
      res.end(
        ANTHROPIC_EARLY + sse({ type: 'error', error: { type: 'overloaded_error' } }, 'error'),
      ),
    );
    const good = await streamer((_n, res) => res.end(ANTHROPIC_EARLY + anthropicToken('ok')));
    const clock = new VirtualClock(); // never advanced: no hedge delay passes
    const f = client({ routes: [route([failing.origin, good.origin])], clock });
    const res = await f(`${failing.origin}/v1/chat`, post);
    expect(await res.text()).toContain('"text":"ok"');
    expect(good.count()).toBe(1);
  });

  it('a stream that ends with no output fails; when every attempt does, the caller gets the last one whole', async () => {
    const empty = OPENAI_EARLY + sse('[DONE]');
    const a = await streamer((_n, res) => res.end(empty));
    const b = await streamer((_n, res) => res.end(empty));
    const f = client({ routes: [route([a.origin, b.origin])], clock: new VirtualClock() });
    const res = await f(`${a.origin}/v1/chat`, post);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(empty);
    expect(a.count() + b.count()).toBe(2);
    expect(f.stats().routes.chat?.failures).toBe(1);
  });

  it('a JSON answer (not a stream) on a first-token route commits as a whole answer', async () => {
    const json = await streamer((_n, res) => res.end('{"choices":[]}'), 'application/json');
    const other = await streamer(() => {});
    const f = client({ routes: [route([json.origin, other.origin])], clock: new VirtualClock() });
    const res = await f(`${json.origin}/v1/chat`, post);
    expect(await res.json()).toEqual({ choices: [] });
    expect(other.count()).toBe(0);
  });

  it('holds at most 64 KiB waiting for output: past it, the attempt commits', async () => {
    const pings = sse({ type: 'ping' }, 'ping').repeat(3000); // ~100 KiB of pings
    const s = await streamer((_n, res) => res.end(pings));
    const f = client({ routes: [route([s.origin])], clock: new VirtualClock() });
    const res = await f(`${s.origin}/v1/chat`, post);
    expect(await res.text()).toBe(pings);
  });

  it('many early events, then the first token: the caller gets the whole stream and its end', async () => {
    // 20 separate writes of 1 KB comments before the first token: the caller's body stream
    // pauses while the held events are handed over, and the winner must resume once it catches up.
    const early = Array.from({ length: 20 }, () => `: ${'p'.repeat(1000)}\n\n`);
    const tail = `${openaiToken('hi')}data: [DONE]\n\n`;
    const s = await streamer((_n, res) => {
      for (const e of early) res.write(e);
      setTimeout(() => res.end(tail), 50);
    });
    const f = client({ routes: [route([s.origin])], clock: new VirtualClock() });
    const res = await f(`${s.origin}/v1/chat`, post);
    expect(await res.text()).toBe(early.join('') + tail);
  });

  it('a HEAD answer has no output to wait for: it is sent once and commits on its headers', async () => {
    const s = await streamer((_n, res) => res.end());
    const f = client({
      routes: [{ ...route([s.origin]), hedge: { maxAttempts: 3 } }],
      clock: new VirtualClock(),
    });
    const res = await f(`${s.origin}/v1/chat`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(s.count()).toBe(1);
  });

  it('chunkTimeoutMs counts output events: a stream that only pings after its first token times out', async () => {
    const s = await streamer((_n, res) => res.write(OPENAI_EARLY + openaiToken('Hi')));
    const clock = new VirtualClock();
    const f = client({ routes: [route([s.origin], { chunkTimeoutMs: 100 })], clock });
    const res = await f(`${s.origin}/v1/chat`, post);
    const reading = res.text();
    reading.catch(() => {});
    // Pings keep coming, 60 virtual ms apart: a body chunk each time, never an output event.
    await clock.advance(60);
    s.responses[0]?.write(': ping\n\n');
    await new Promise((r) => setTimeout(r, 20));
    await clock.advance(60);
    await expect(reading).rejects.toThrow();
    await waitFor(() => s.responses[0]?.destroyed === true, {
      message: 'the stalled stream was closed',
    });
  });
});

describe('the body watch (virtual clock)', () => {
  it('reports time to first token and the gaps between chunks with output; pings are not progress', async () => {
    const { StreamWatch } = await import('../src/engine/stream-watch.js');
    const clock = new VirtualClock();
    const seen: string[] = [];
    const stalls: string[] = [];
    const route = { settings: { name: 'r', commitOn: 'first-token', chunkTimeoutMs: 100 } };
    const watch = new StreamWatch(
      route as never,
      clock,
      0,
      {
        firstByte: (ms) => seen.push(`byte ${ms}`),
        chunkGap: (ms) => seen.push(`gap ${ms}`),
        firstToken: (ms) => seen.push(`token ${ms}`),
        tokenGap: (ms) => seen.push(`token-gap ${ms}`),
      },
      (error) => stalls.push(error.code),
      () => false,
    );
    await clock.advance(20);
    watch.chunk();
    watch.tokens(1);
    await clock.advance(5);
    watch.chunk();
    watch.tokens(2);
    await clock.advance(60);
    watch.chunk(); // a ping: a chunk, not progress
    // The last output came at 25 ms: the stall is declared at 125 ms, whatever the ping.
    await clock.advance(39);
    expect(stalls).toEqual([]);
    await clock.advance(1);
    expect(stalls).toEqual(['TAILCUT_CHUNK_TIMEOUT']);
    expect(watch.end()).toEqual({ chunks: 3, tokens: 3 });
    expect(seen).toEqual(['byte 20', 'token 20', 'gap 5', 'token-gap 5', 'gap 60']);
  });
});

describe('first-token options', () => {
  it('accepts a predicate for a format of its own, and refuses a malformed one', async () => {
    const { createHedgedFetch } = await import('../src/index.js');
    const s = await streamer((n, res) =>
      n === 0 ? res.write(sse('warming up', 'status')) : res.end(sse('the answer', 'output')),
    );
    const clock = new VirtualClock();
    const f = createHedgedFetch({
      routes: [
        route([s.origin, `${s.origin.replace('127.0.0.1', 'localhost')}`], {
          commitOn: { firstToken: (e) => e.event === 'output' },
        }),
      ],
      budget: { ratio: 1, minPerSecond: 0 },
      clock,
    });
    const pending = f(`${s.origin}/v1/chat`, post);
    await waitFor(() => s.count() === 1);
    await clock.advance(100);
    expect(await (await pending).text()).toBe(sse('the answer', 'output'));
    await f.close();
    expect(() =>
      createHedgedFetch({ routes: [{ name: 'r', commitOn: { firstToken: 'yes' } as never }] }),
    ).toThrow(/routes\[0\]\.commitOn/);
    expect(() =>
      createHedgedFetch({ routes: [{ name: 'r', commitOn: 'first-tokens' as never }] }),
    ).toThrow(/"first-token"/);
  });
});
