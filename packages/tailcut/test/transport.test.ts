import { Readable } from 'node:stream';
import * as undici from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import type { HedgedFetchOptions } from '../src/index.js';
import { adapters, openClient } from './support/adapters.js';
import { type Behaviour, type Replica, serve, startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

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

/** A client of the adapter under test, closed after the test. */
const client = (options: HedgedFetchOptions) => openClient(adapter, options, open);

/** A route that hedges after a fixed 30 ms (minSamples never reached in these tests). */
function fixedDelay(extra: Partial<HedgedFetchOptions['routes'][number]> = {}) {
  return {
    name: 'r',
    match: { path: '/v1/*' },
    hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
    ...extra,
  };
}

/**
 * The first request is held until the client gives up on it: only a hedge can answer the call,
 * however long the hedge takes on a busy machine. Later requests answer at once.
 */
const slowThenFast = (n: number): Behaviour => (n === 0 ? { hold: true } : {});

describe.each(adapters)('$name over loopback replicas', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('hedges a slow primary to another replica and returns the hedge answer', async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b');
    const f = client({ routes: [fixedDelay({ replicas: [a.origin, b.origin] })] });
    const res = await f(`${a.origin}/v1/items?x=1`);
    // The primary never answers: the call has an answer because the hedge gave it.
    expect(await res.text()).toBe('ok from b');
    expect(a.seen).toHaveLength(1);
    expect(b.seen).toHaveLength(1);
    expect(b.seen[0]?.url).toBe('/v1/items?x=1');
    const s = f.stats().routes.r;
    expect(s).toMatchObject({ calls: 1, attempts: 2, hedgesSent: 1, hedgesWon: 1 });
  });

  it('aborts the loser at once: the server sees the close within a few ms', async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b', () => ({ delayMs: 5 }));
    const f = client({ routes: [fixedDelay({ replicas: [a.origin, b.origin] })] });
    const res = await f(`${a.origin}/v1/x`);
    const wonAt = performance.now();
    await res.text();
    // The loser is held by its replica for good: only the client aborting it closes it (the
    // client stays open until the test ends). "At once": well within a second even on a busy
    // machine, where waiting for the loser would be forever.
    await waitFor(() => a.seen[0]?.abortedAt !== undefined, {
      message: 'the losing primary was closed by the client',
    });
    expect((a.seen[0]?.abortedAt ?? 0) - wonAt).toBeLessThan(1000);
    expect(a.seen[0]?.answered).toBe(false);
  });

  it('never sends more than maxAttempts attempts', async () => {
    // Every answer is held, and hedge delays pass only when the test moves the client's clock.
    const replicas = await Promise.all(
      ['a', 'b', 'c', 'd'].map((n) => replica(n, () => ({ hold: true }))),
    );
    const clock = new VirtualClock();
    const f = client({
      routes: [
        fixedDelay({
          replicas: replicas.map((r) => r.origin),
          hedge: { initialDelayMs: 10, minSamples: 1_000_000, maxAttempts: 3 },
        }),
      ],
      clock,
    });
    const total = () => replicas.reduce((sum, r) => sum + r.seen.length, 0);
    const held = () => replicas.reduce((sum, r) => sum + r.holding(), 0);
    const calls = [1, 2, 3].map(() => f(`${replicas[0]?.origin}/v1/x`).then((r) => r.text()));
    for (const expected of [3, 6, 9]) {
      if (expected > 3) await clock.advance(10);
      await waitFor(() => held() === expected, {
        message: () => `${expected} attempts held at the replicas, saw ${total()}`,
      });
    }
    // Any number of further delays pass: no call sends a fourth attempt.
    await clock.advance(10_000);
    expect(f.stats().routes.r?.attempts).toBe(9);
    for (const r of replicas) r.release();
    await Promise.all(calls);
    expect(total()).toBe(9);
    expect(f.stats().routes.r?.attempts).toBe(9);
  });

  it('each hedge of a call goes to a replica not yet tried in that call', async () => {
    // Answers are held until all three attempts were sent.
    const replicas = await Promise.all(
      ['a', 'b', 'c'].map((n) => replica(n, () => ({ hold: true }))),
    );
    const f = client({
      routes: [
        fixedDelay({
          replicas: replicas.map((r) => r.origin),
          hedge: { initialDelayMs: 10, minSamples: 1_000_000, maxAttempts: 3 },
        }),
      ],
    });
    const call = f(`${replicas[0]?.origin}/v1/x`).then((r) => r.text());
    const held = () => replicas.reduce((sum, r) => sum + r.holding(), 0);
    await waitFor(() => held() === 3, { message: () => `3 attempts held, saw ${held()}` });
    for (const r of replicas) r.release();
    await call;
    expect(replicas.map((r) => r.seen.length)).toEqual([1, 1, 1]);
  });

  it('with one replica, hedges go to the same origin (a load balancer behind it)', async () => {
    const a = await replica('a', slowThenFast);
    const f = client({ routes: [fixedDelay()] });
    const res = await f(`${a.origin}/v1/x`);
    expect(res.status).toBe(200);
    await res.text();
    expect(a.seen).toHaveLength(2);
  });

  it('never sends a non-idempotent POST twice', async () => {
    const a = await replica('a', () => ({ delayMs: 150 }));
    const b = await replica('b');
    const f = client({ routes: [fixedDelay({ replicas: [a.origin, b.origin] })] });
    const res = await f(`${a.origin}/v1/x`, { method: 'POST', body: 'once' });
    expect(await res.text()).toBe('ok from a');
    expect(a.seen.length + b.seen.length).toBe(1);
    expect(f.stats().routes.r?.hedgesSent).toBe(0);
  });

  const bodies: [string, () => unknown, string][] = [
    ['string', () => 'héllo', 'héllo'],
    ['Uint8Array', () => new TextEncoder().encode('bytes'), 'bytes'],
    ['ArrayBuffer', () => new TextEncoder().encode('buffer').buffer, 'buffer'],
    ['URLSearchParams', () => new URLSearchParams({ q: 'a b', n: '1' }), 'q=a+b&n=1'],
    ['Blob', () => new Blob(['blob body']), 'blob body'],
    [
      'ReadableStream',
      () =>
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode('str'));
            c.enqueue(new TextEncoder().encode('eam'));
            c.close();
          },
        }),
      'stream',
    ],
    [
      'Node Readable',
      () => Readable.from([Buffer.from('node '), Buffer.from('readable')]),
      'node readable',
    ],
  ];
  for (const [kind, make, text] of bodies) {
    it(`idempotent POST with a ${kind} body: both attempts get the same bytes and Idempotency-Key`, async () => {
      const a = await replica('a', slowThenFast);
      const b = await replica('b');
      const f = client({
        routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
      });
      const res = await f(`${a.origin}/v1/x`, {
        method: 'POST',
        body: make() as RequestInit['body'],
        duplex: 'half',
      } as RequestInit);
      await res.text();
      const [pa, pb] = [a.seen[0], b.seen[0]];
      expect(pa?.body.toString()).toBe(text);
      expect(pb?.body.equals(pa?.body ?? Buffer.alloc(0))).toBe(true);
      expect(pa?.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
      expect(pb?.headers['idempotency-key']).toBe(pa?.headers['idempotency-key']);
      expect(pb?.headers['content-type']).toBe(pa?.headers['content-type']);
    });
  }

  it('FormData is serialised once: both attempts carry the same multipart boundary and bytes', async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
    });
    const form = adapter.fetchOnly ? new FormData() : new undici.FormData();
    form.set('field', 'value');
    form.set('file', new Blob(['content']), 'f.txt');
    await (await f(`${a.origin}/v1/x`, { method: 'POST', body: form as FormData })).text();
    expect(a.seen[0]?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(b.seen[0]?.headers['content-type']).toBe(a.seen[0]?.headers['content-type']);
    expect(b.seen[0]?.body.equals(a.seen[0]?.body ?? Buffer.alloc(0))).toBe(true);
  });

  it("keeps the caller's Idempotency-Key", async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
    });
    await (
      await f(`${a.origin}/v1/x`, {
        method: 'PUT',
        body: 'x',
        headers: { 'Idempotency-Key': 'k-1' },
      })
    ).text();
    expect(a.seen[0]?.headers['idempotency-key']).toBe('k-1');
    expect(b.seen[0]?.headers['idempotency-key']).toBe('k-1');
  });

  it('a stream body over the per-call cap is sent exactly once, intact, unhedged', async () => {
    const a = await replica('a', () => ({ delayMs: 100 }));
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
      maxBufferedBodyBytes: 1024,
    });
    const chunks = Array.from({ length: 10 }, (_, i) => Buffer.alloc(300, 97 + i));
    const res = await f(`${a.origin}/v1/x`, {
      method: 'POST',
      body: Readable.from(chunks),
      duplex: 'half',
    } as RequestInit);
    expect(await res.text()).toBe('ok from a');
    expect(a.seen.length + b.seen.length).toBe(1);
    expect(a.seen[0]?.body.equals(Buffer.concat(chunks))).toBe(true);
  });

  it('a stream body over the global cap is sent once too', async () => {
    const a = await replica('a', () => ({ delayMs: 100 }));
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
      maxTotalBufferedBytes: 100,
    });
    const body = Buffer.alloc(5000, 120);
    await (
      await f(`${a.origin}/v1/x`, {
        method: 'POST',
        body: Readable.from([body]),
        duplex: 'half',
      } as RequestInit)
    ).text();
    expect(a.seen.length + b.seen.length).toBe(1);
    expect(a.seen[0]?.body.equals(body)).toBe(true);
  });

  it('a 503 triggers the next attempt at once; the acceptable answer wins', async () => {
    const a = await replica('a', () => ({ status: 503 }));
    const b = await replica('b', () => ({ delayMs: 5 }));
    // The client's clock never moves, so the hedge delay never passes: only the 503 can have
    // sent the next attempt.
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], hedge: { initialDelayMs: 5000 } })],
      clock: new VirtualClock(),
    });
    const res = await f(`${a.origin}/v1/x`);
    expect(res.status).toBe(200);
    await res.text();
    expect(f.stats().routes.r?.attempts).toBe(2);
  });

  it('when every attempt fails with a status, resolves with the last response', async () => {
    const a = await replica('a', () => ({ status: 503, body: 'a down' }));
    const b = await replica('b', () => ({ status: 502, delayMs: 5, body: 'b down' }));
    const f = client({ routes: [fixedDelay({ replicas: [a.origin, b.origin] })] });
    const res = await f(`${a.origin}/v1/x`);
    expect(res.status).toBe(502);
    expect(await res.text()).toBe('b down');
    expect(f.stats().routes.r?.failures).toBe(1);
  });

  it('all replicas down (connection refused) rejects, without hanging', async () => {
    const a = await replica('a');
    const b = await replica('b');
    await a.close();
    await b.close();
    const f = client({ routes: [fixedDelay({ replicas: [a.origin, b.origin] })] });
    await expect(f(`${a.origin}/v1/x`)).rejects.toThrow(TypeError);
    expect(f.stats().routes.r).toMatchObject({ attempts: 2, failures: 1 });
  });

  it('a reset primary is followed by a hedge at once', async () => {
    const a = await replica('a', () => ({ reset: true }));
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], hedge: { initialDelayMs: 5000 } })],
    });
    const res = await f(`${a.origin}/v1/x`);
    expect(await res.text()).toBe('ok from b');
  });

  it('a 409 on a hedge is not taken as the answer', async () => {
    // The primary answers only once the hedge's 409 is out.
    const a = await replica('a', () => ({ hold: true }));
    const b = await replica('b', () => ({ status: 409 }));
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
    });
    const call = f(`${a.origin}/v1/x`, { method: 'POST', body: 'x' });
    await waitFor(() => b.seen[0]?.answered === true && a.holding() === 1, {
      message: 'the hedge got its 409 while the primary is held',
    });
    a.release();
    const res = await call;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok from a');
  });

  it('passes unmatched requests through once, unhedged', async () => {
    const a = await replica('a', () => ({ delayMs: 100 }));
    const f = client({ routes: [fixedDelay()] });
    const res = await f(`${a.origin}/other`, { headers: { 'x-test': '1' } });
    expect(await res.text()).toBe('ok from a');
    expect(a.seen).toHaveLength(1);
    expect(a.seen[0]?.headers['x-test']).toBe('1');
    expect(a.seen[0]?.headers['idempotency-key']).toBeUndefined();
    expect(f.stats().routes.r?.calls).toBe(0);
  });

  it.runIf(current.fetchOnly)('accepts a Request object as input', async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b');
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin], idempotent: true })],
    });
    const req = new Request(`${a.origin}/v1/x`, { method: 'POST', body: 'from request' });
    await (await f(req)).text();
    expect(b.seen[0]?.body.toString()).toBe('from request');
    expect(a.seen[0]?.body.toString()).toBe('from request');
  });

  it('commitOn first-byte: a hedge wins when the primary sends headers but no body', async () => {
    // Headers, then nothing until the client gives up on it.
    const stalls = await serve((_req, res) => {
      res.writeHead(200);
      res.flushHeaders();
    });
    open.push(stalls);
    const b = await replica('b', () => ({ delayMs: 5 }));
    const f = client({
      routes: [fixedDelay({ replicas: [stalls.origin, b.origin], commitOn: 'first-byte' })],
    });
    const res = await f(`${b.origin}/v1/stream`);
    expect(await res.text()).toBe('ok from b');
    expect(f.stats().routes.r?.hedgesWon).toBe(1);
  });
});

describe.each(adapters)('$name: replica health', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('a 503 with Retry-After takes that replica out of rotation, and withdraws from the budget', async () => {
    const a = await replica('a', (n) =>
      n === 0 ? { status: 503, headers: { 'retry-after': '2' } } : {},
    );
    const b = await replica('b');
    // The client's clock stands still, so the 2 s of Retry-After do not run out during the test.
    const f = client({
      routes: [fixedDelay({ replicas: [a.origin, b.origin] })],
      clock: new VirtualClock(),
    });
    for (let i = 0; i < 6; i++) await (await f(`${a.origin}/v1/x`)).text();
    // The first call went to a (503), then to b at once; every later primary avoided a.
    expect(a.seen).toHaveLength(1);
    expect(b.seen).toHaveLength(6);
    expect(f.stats().budget.penalties).toBe(1);
  });
});

describe.each(adapters)('$name: credentials per replica', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('each attempt carries only its own replica’s credentials, never another’s or the caller’s', async () => {
    const a = await replica('a', slowThenFast);
    const b = await replica('b');
    const f = client({
      routes: [
        fixedDelay({
          replicas: [
            { origin: a.origin, headers: { 'x-api-key': 'key-for-a' } },
            { origin: b.origin, headers: { authorization: 'Bearer for-b' } },
          ],
        }),
      ],
    });
    await (
      await f(`${a.origin}/v1/x`, { headers: { 'x-api-key': 'callers-key', 'x-trace': 't1' } })
    ).text();
    expect(a.seen[0]?.headers['x-api-key']).toBe('key-for-a');
    expect(a.seen[0]?.headers.authorization).toBeUndefined();
    expect(b.seen[0]?.headers.authorization).toBe('Bearer for-b');
    expect(b.seen[0]?.headers['x-api-key']).toBeUndefined();
    expect(b.seen[0]?.headers['x-trace']).toBe('t1');
    expect(b.seen[0]?.headers.host).toBe(new URL(b.origin).host);
  });
});

describe.each(adapters)('$name: streaming answers', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('a body that stalls between chunks past chunkTimeoutMs fails with TAILCUT_CHUNK_TIMEOUT', async () => {
    let closed = false;
    // One chunk, then nothing until the client closes the connection.
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      res.on('close', () => {
        closed = true;
      });
    });
    open.push(server);
    const origin = server.origin;
    const f = client({
      routes: [{ name: 's', chunkTimeoutMs: 100, hedge: { initialDelayMs: 5000 } }],
    });
    const started = performance.now();
    const res = await f(`${origin}/v1/stream`);
    const err = await res.text().catch((e: unknown) => e);
    // Not before 100 ms of silence; and about then, not at some much later timeout (a wide
    // margin for a busy machine).
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(95);
    expect(elapsed).toBeLessThan(2000);
    const cause = (err as { cause?: unknown }).cause ?? err;
    expect(String((cause as Error).message ?? cause)).toMatch(/chunkTimeoutMs 100/);
    await waitFor(() => closed, { message: 'the stalled answer’s connection was closed' });
  });

  it('a body that keeps flowing is not cut by chunkTimeoutMs', async () => {
    const a = await replica('a', () => ({ delayMs: 5 }));
    const f = client({ routes: [{ name: 's', chunkTimeoutMs: 50 }] });
    await new Promise((r) => setTimeout(r, 120));
    expect(await (await f(`${a.origin}/v1/x`)).text()).toBe('ok from a');
  });
});

describe.each(adapters)('$name: conditioning key', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('each model learns its own delay: a slow model is not hedged at the fast one’s p80', async () => {
    // Latencies are exact: every answer is held while the test moves the client's clock by the
    // latency it wants, then released.
    const server = await replica('m', () => ({ hold: true }));
    const clock = new VirtualClock();
    const f = client({
      routes: [
        {
          name: 'chat',
          idempotent: true,
          hedge: { minSamples: 10, initialDelayMs: 1000, percentile: 80 },
          key: (req) => (JSON.parse(req.text() ?? '{}') as { model?: string }).model,
        },
      ],
      budget: { ratio: 1 },
      clock,
    });
    const hedgesSent = () => f.stats().routes.chat?.hedgesSent ?? 0;
    let calls = 0;
    /** One call of `model`, `ms` long on the client's clock; `check` runs before it answers. */
    const call = async (model: string, ms: number, check = () => {}) => {
      const path = `/v1/chat?call=${++calls}`;
      let done = false;
      const pending = f(`${server.origin}${path}`, {
        method: 'POST',
        body: JSON.stringify({ model }),
      })
        .then((r) => r.text())
        .finally(() => {
          done = true;
        });
      try {
        // Its request reached the server: the call has started on the client's clock.
        await waitFor(() => server.seen.some((s) => s.url === path), {
          message: `${path} (${model}) reached the server`,
        });
        await clock.advance(ms);
        check();
      } finally {
        // Answer it, and any hedge it sent (which may arrive later), until the call is done.
        await waitFor(
          () => {
            server.release();
            return done;
          },
          { message: `${path} (${model}) answered once released` },
        );
        await pending;
      }
    };
    // Nine small calls (2 ms) for one large (60 ms): a shared p80 would be the small model's.
    for (let i = 0; i < 12; i++) {
      await call('large', 60);
      for (let k = 0; k < 9; k++) await call('small', 2);
    }
    // 30 ms into a call: past the small model's p80, well short of the large model's.
    const before = hedgesSent();
    await call('large', 30, () => expect(hedgesSent() - before).toBe(0));
    await call('small', 30, () => expect(hedgesSent() - before).toBe(1));
    expect(f.stats().routes.chat?.keys).toBe(2);
    const byKey = f.stats().routes.chat?.byKey;
    expect(Object.keys(byKey ?? {}).sort()).toEqual(['large', 'small']);
    expect(byKey?.large?.delayMs).toBeGreaterThan(byKey?.small?.delayMs ?? Infinity);
    expect(byKey?.small?.samples).toBeGreaterThan(0);
  });
});

describe.each(adapters)('$name: cost-weighted budget', (current) => {
  beforeAll(() => {
    adapter = current;
  });

  it('weighs calls with budget.cost: an expensive call is not hedged on cheap calls’ deposits', async () => {
    const a = await replica('a', (n) => (n >= 20 ? { hold: true } : {}));
    // The client's own clock decides when hedges are asked for: none for the cheap calls,
    // however slow the machine; one for the expensive call, when the test moves the clock.
    const clock = new VirtualClock();
    const f = client({
      routes: [fixedDelay({ idempotent: true })],
      budget: {
        ratio: 0.5,
        minPerSecond: 0,
        cost: (req) => (JSON.parse(req.text() ?? '{}') as { tokens?: number }).tokens ?? 1,
      },
      clock,
    });
    const call = (tokens: number) =>
      f(`${a.origin}/v1/x`, { method: 'POST', body: JSON.stringify({ tokens }) }).then((r) =>
        r.text(),
      );
    for (let i = 0; i < 20; i++) await call(1); // deposits 20 × 0.5 × 1 = 10
    // The expensive call deposits 500; its hedge would cost 1,000: refused.
    const expensive = call(1000);
    await waitFor(() => a.holding() === 1, { message: 'the expensive call is held' });
    await clock.advance(30);
    expect(f.stats().routes.r).toMatchObject({ hedgesSent: 0, hedgesDeniedBudget: 1 });
    a.release();
    await expensive;
    expect(f.stats().routes.r?.hedgesSent).toBe(0);
  });
});
