import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HedgedFetchOptions, ReplicaOptions } from '../src/index.js';
import { isTailcutError } from '../src/index.js';
import { adapters, openClient } from './support/adapters.js';
import { type Behaviour, type Replica, startReplica } from './support/replica.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function replica(name: string, behave?: (n: number) => Behaviour): Promise<Replica> {
  const r = await startReplica(name, behave);
  open.push(r);
  return r;
}

let adapter = adapters[0] as (typeof adapters)[number];
const client = (options: HedgedFetchOptions) => openClient(adapter, options, open);

/** The first request is held until the client gives up on it; later ones answer at once. */
const slowThenFast = (n: number): Behaviour => (n === 0 ? { hold: true } : {});

/** A POST route that hedges after 30 ms over `replicas`. */
function route(replicas: (string | ReplicaOptions)[]) {
  return {
    name: 'chat',
    match: { path: '/v1/chat/completions' },
    replicas,
    idempotent: true,
    hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
  };
}

/** The TailcutError of a rejected call: createHedgedFetch's own, or the cause of fetch's. */
async function rejection(call: Promise<unknown>): Promise<unknown> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isTailcutError(err) ? err : (err as { cause?: unknown } | undefined)?.cause;
}

const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

describe.each(adapters)('$name: a request shape per replica', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('sends each replica its own path, query, headers and JSON fields, and nothing of the others', async () => {
    const openai = await replica('openai', slowThenFast);
    const azure = await replica('azure');
    const f = client({
      routes: [
        route([
          { origin: openai.origin, name: 'openai' },
          {
            origin: azure.origin,
            name: 'azure',
            path: '/openai/deployments/dep-mini/chat/completions',
            query: { 'api-version': '2024-10-21', drop: null },
            headers: { authorization: null, 'api-key': 'azure-key', cookie: null },
            json: { model: 'dep-mini', extra: { n: 1 } },
          },
        ]),
      ],
    });
    const res = await f(`${openai.origin}/v1/chat/completions?keep=1&drop=2`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk-openai',
        cookie: 'session=1',
        'content-type': 'application/json',
        'x-trace': 't',
      },
      body,
    });
    expect(await res.text()).toBe('ok from azure');
    const o = openai.seen[0];
    expect(o?.url).toBe('/v1/chat/completions?keep=1&drop=2');
    expect(o?.headers.authorization).toBe('Bearer sk-openai');
    expect(o?.headers.cookie).toBe('session=1');
    expect(o?.headers['api-key']).toBeUndefined();
    expect(o?.body.toString()).toBe(body);
    const a = azure.seen[0];
    expect(a?.url).toBe(
      '/openai/deployments/dep-mini/chat/completions?keep=1&api-version=2024-10-21',
    );
    expect(a?.headers.authorization).toBeUndefined();
    expect(a?.headers.cookie).toBeUndefined();
    expect(a?.headers['api-key']).toBe('azure-key');
    expect(a?.headers['x-trace']).toBe('t');
    expect(a?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(a?.body.toString() ?? '')).toEqual({
      ...JSON.parse(body),
      model: 'dep-mini',
      extra: { n: 1 },
    });
    expect(Number(a?.headers['content-length'])).toBe(a?.body.byteLength);
    // Both attempts carry the call's one Idempotency-Key.
    expect(a?.headers['idempotency-key']).toBe(o?.headers['idempotency-key']);
    const replicas = f.stats().routes.chat?.replicas;
    expect(replicas?.azure).toMatchObject({ attempts: 1, won: 1 });
    expect(replicas?.openai).toMatchObject({ attempts: 1, won: 0 });
  });

  it('a path function gets the request path; a replica with a key of its own never gets the caller’s', async () => {
    const vllm = await replica('vllm');
    const f = client({
      routes: [
        {
          ...route([
            {
              origin: vllm.origin,
              path: (p) => p.replace('/v1/', '/openai/v1/'),
              headers: { authorization: 'Bearer vllm-key' },
              json: { model: 'meta-llama/Llama-3.1-8B-Instruct' },
            },
          ]),
        },
      ],
    });
    await (
      await f(`${vllm.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-openai', 'x-api-key': 'caller', 'api-key': 'c' },
        body,
      })
    ).text();
    const v = vllm.seen[0];
    expect(v?.url).toBe('/openai/v1/chat/completions');
    expect(v?.headers.authorization).toBe('Bearer vllm-key');
    expect(v?.headers['x-api-key']).toBeUndefined();
    expect(v?.headers['api-key']).toBeUndefined();
    expect(JSON.parse(v?.body.toString() ?? '').model).toBe('meta-llama/Llama-3.1-8B-Instruct');
  });

  it.each([
    ['text', 'not json', /the body is not JSON/],
    ['a JSON array', '[{"model":"x"}]', /the body is an array/],
    ['a JSON string', '"x"', /the body is string/],
    ['JSON null', 'null', /the body is null/],
    ['no body', undefined, /the request has none/],
  ])(
    'a json rewrite of %s fails the call with TAILCUT_REWRITE_FAILED, nothing sent',
    async (_, payload, message) => {
      const a = await replica('a');
      const b = await replica('b');
      const f = client({ routes: [route([a.origin, { origin: b.origin, json: { model: 'm' } }])] });
      const err = await rejection(
        f(`${a.origin}/v1/chat/completions`, { method: 'POST', body: payload ?? null }),
      );
      expect(isTailcutError(err, 'TAILCUT_REWRITE_FAILED')).toBe(true);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).toMatch(/route "chat", replica "http:\/\/127\.0\.0\.1:\d+"/);
      expect(a.seen).toHaveLength(0);
      expect(b.seen).toHaveLength(0);
      // The client keeps working.
      const ok = await f(`${a.origin}/v1/chat/completions`, { method: 'POST', body: '{}' });
      expect(ok.status).toBe(200);
    },
  );

  it('a path function that throws or returns no path fails the call before anything is sent', async () => {
    const a = await replica('a');
    for (const path of [
      () => {
        throw new Error('boom');
      },
      () => 'no-slash',
      () => '/x?y=1',
    ]) {
      const f = client({ routes: [route([{ origin: a.origin, name: 'a', path }])] });
      const err = await rejection(f(`${a.origin}/v1/chat/completions`, { method: 'POST', body }));
      expect(isTailcutError(err, 'TAILCUT_REWRITE_FAILED')).toBe(true);
      expect((err as Error).message).toMatch(/route "chat", replica "a": its `path` function/);
    }
    expect(a.seen).toHaveLength(0);
  });

  it('a redirect from a shaped replica reaches the caller without its Location: nothing follows it with the caller’s keys', async () => {
    const target = await replica('target');
    const openai = await replica('openai', () => ({ hold: true }));
    const azure = await replica('azure', () => ({
      status: 302,
      headers: { location: `${target.origin}/steal` },
    }));
    const f = client({
      routes: [
        route([
          { origin: openai.origin },
          {
            origin: azure.origin,
            headers: { 'api-key': 'az' },
            path: '/openai/x',
            hedgeOnly: true,
          },
        ]),
      ],
    });
    const res = await f(`${openai.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': 'caller-key' },
      body,
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBeNull();
    expect(target.seen).toHaveLength(0);
  });

  it('a JSON body streamed in is buffered and rewritten, even for a call sent once', async () => {
    const a = await replica('a');
    const f = client({
      routes: [
        {
          name: 'chat',
          match: { path: '/v1/chat/completions' },
          replicas: [{ origin: a.origin, json: { model: 'm2' } }],
        },
      ],
    });
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"model":'));
        c.enqueue(new TextEncoder().encode('"m1","x":1}'));
        c.close();
      },
    });
    const res = await f(`${a.origin}/v1/chat/completions`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(JSON.parse(a.seen[0]?.body.toString() ?? '')).toEqual({ model: 'm2', x: 1 });
  });

  it('a redirect into another replica of the route reaches the caller without its Location: nothing is sent twice', async () => {
    const b = await replica('b');
    const a = await replica('a', () => ({
      status: 307,
      headers: { location: `${b.origin}/v1/pay` },
    }));
    const f = client({
      routes: [
        {
          name: 'pay',
          match: { path: '/v1/pay' },
          replicas: [{ origin: a.origin }, { origin: b.origin, hedgeOnly: true }],
        },
      ],
    });
    const res = await f(`${a.origin}/v1/pay`, { method: 'POST', body: 'amount=10' });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBeNull();
    expect(a.seen).toHaveLength(1);
    expect(b.seen).toHaveLength(0);
  });

  it('a JSON route sends a body over the buffer caps once, as it is, to a replica without a rewrite', async () => {
    const plain = await replica('plain');
    const rewriting = await replica('rewriting');
    const f = client({
      routes: [
        route([{ origin: rewriting.origin, json: { model: 'm2' } }, { origin: plain.origin }]),
      ],
      maxBufferedBodyBytes: 1024,
    });
    const big = JSON.stringify({ model: 'm1', content: 'x'.repeat(4096) });
    for (let i = 0; i < 3; i++) {
      const res = await f(`${plain.origin}/v1/chat/completions`, { method: 'POST', body: big });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(rewriting.seen).toHaveLength(0);
    expect(plain.seen).toHaveLength(3);
    for (const seen of plain.seen) expect(seen.body.toString()).toBe(big);
  });

  it('a JSON route whose every primary rewrites fails a body over the caps with a clear error, sending nothing', async () => {
    const a = await replica('a');
    const f = client({
      routes: [route([{ origin: a.origin, json: { model: 'm2' } }])],
      maxBufferedBodyBytes: 1024,
    });
    const big = JSON.stringify({ model: 'm1', content: 'x'.repeat(4096) });
    const err = await rejection(
      f(`${a.origin}/v1/chat/completions`, { method: 'POST', body: big }),
    );
    expect(err).toMatchObject({ code: 'TAILCUT_REWRITE_FAILED' });
    expect(String((err as Error).message)).toMatch(/maxBufferedBodyBytes/);
    expect(a.seen).toHaveLength(0);
  });
});
