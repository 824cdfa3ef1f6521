/**
 * Holes found by probing tailcut as a skeptical user would: redirects and replica credentials,
 * the body quota, close(), Response fidelity, Request fields, hedges whose dispatch failed.
 * Each test failed before its fix.
 */
import { createHash } from 'node:crypto';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import { createHedgedFetch, hedge } from '../src/index.js';
import { type Replica, serve, startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function replica(...args: Parameters<typeof startReplica>): Promise<Replica> {
  const r = await startReplica(...args);
  open.push(r);
  return r;
}

describe('redirects', () => {
  it("never sends a replica's credential to another origin, whatever the composition", async () => {
    const elsewhere = await replica('elsewhere');
    const keyed = await serve((req, res) => {
      res.writeHead(302, { location: `${elsewhere.origin}/other` }).end();
      req.resume();
    });
    open.push(keyed);
    const routes = [
      {
        name: 'r',
        match: { host: new URL(keyed.origin).host },
        replicas: [{ origin: keyed.origin, headers: { 'api-key': 'SECRET-A' } }],
      },
    ];
    // Redirect inside hedge (the order that leaked) and outside it.
    const inside = new undici.Agent().compose(
      undici.interceptors.redirect({ maxRedirections: 3 }),
      hedge({ routes }),
    );
    const outside = new undici.Agent().compose(
      hedge({ routes }),
      undici.interceptors.redirect({ maxRedirections: 3 }),
    );
    for (const dispatcher of [inside, outside]) {
      const res = await undici.request(`${keyed.origin}/start`, { dispatcher });
      await res.body.dump();
      await dispatcher.close();
    }
    const hf = createHedgedFetch({ routes });
    await (await hf(`${keyed.origin}/start`)).text();
    await hf.close();
    expect(elsewhere.seen.map((s) => s.headers['api-key'])).not.toContain('SECRET-A');
    expect(elsewhere.seen.every((s) => s.headers['api-key'] === undefined)).toBe(true);
  });

  it('follows a redirect to another origin on a route without match.host (fetch and an outer redirect interceptor)', async () => {
    const target = await replica('target');
    const service = await replica('service', () => ({
      status: 302,
      headers: { location: `${target.origin}/landed` },
    }));
    const routes = [{ name: 'r', replicas: [service.origin] }];
    const hf = createHedgedFetch({ routes });
    const res = await hf(`${service.origin}/start`);
    expect(await res.text()).toBe('ok from target');
    expect(res.redirected).toBe(true);
    expect(res.url).toBe(`${target.origin}/landed`);
    await hf.close();
    const agent = new undici.Agent().compose(
      hedge({ routes }),
      undici.interceptors.redirect({ maxRedirections: 3 }),
    );
    const r2 = await undici.request(`${service.origin}/start`, { dispatcher: agent });
    expect(await r2.body.text()).toBe('ok from target');
    await agent.close();
    expect(service.seen).toHaveLength(2);
    expect(target.seen.map((s) => s.url)).toEqual(['/landed', '/landed']);
  });
});

describe('redirects to another origin, whatever follows them', () => {
  it('reach their target unhedged: fetch over hedge(), and an interceptor between hedge and redirect', async () => {
    const target = await replica('target');
    const service = await replica('service', (_n, seen) =>
      seen.url === '/start'
        ? { status: 302, headers: { location: `${target.origin}/landed` } }
        : {},
    );
    const routes = [
      { name: 'r', replicas: [{ origin: service.origin, headers: { 'x-api-key': 'SECRET' } }] },
    ];
    const viaFetch = new undici.Agent().compose(hedge({ routes }));
    const res = await undici.fetch(`${service.origin}/start`, { dispatcher: viaFetch });
    expect(await res.text()).toBe('ok from target');
    await viaFetch.close();
    const layered = new undici.Agent().compose(
      hedge({ routes }),
      undici.interceptors.retry(),
      undici.interceptors.redirect({ maxRedirections: 3 }),
    );
    const r2 = await undici.request(`${service.origin}/start`, { dispatcher: layered });
    expect(await r2.body.text()).toBe('ok from target');
    await layered.close();
    expect(service.seen.map((s) => s.url)).toEqual(['/start', '/start']);
    expect(target.seen.map((s) => s.headers['x-api-key'])).toEqual([undefined, undefined]);
  });

  it('a route with replicas and no match.host leaves other origins alone', async () => {
    const mine = await replica('mine');
    const thirdParty = await replica('third-party');
    const hf = createHedgedFetch({
      routes: [
        {
          name: 'r',
          match: { path: '/v1/*' },
          replicas: [{ origin: mine.origin, headers: { 'x-api-key': 'K' } }],
        },
      ],
    });
    expect(await (await hf(`${thirdParty.origin}/v1/x`)).text()).toBe('ok from third-party');
    expect(thirdParty.seen[0]?.headers['x-api-key']).toBeUndefined();
    expect(hf.stats().routes.r?.calls).toBe(0);
    expect(await (await hf(`${mine.origin}/v1/x`)).text()).toBe('ok from mine');
    await hf.close();
  });
});

describe('request bodies', () => {
  it('gives the bytes of a stream body that failed while buffering back to the global quota', async () => {
    const primary = await replica('primary', () => ({ hold: true }));
    const backup = await replica('backup');
    const clock = new VirtualClock();
    const interceptor = hedge({
      routes: [
        {
          name: 'r',
          replicas: [primary.origin, backup.origin],
          idempotent: true,
          hedge: { initialDelayMs: 10 },
        },
      ],
      budget: { ratio: 1, minPerSecond: 0 },
      maxTotalBufferedBytes: 100,
      clock,
    });
    const agent = new undici.Agent().compose(interceptor);
    async function* failing() {
      yield new Uint8Array(40);
      throw new Error('upload failed');
    }
    for (let i = 0; i < 5; i++) {
      await expect(
        undici.request(`${primary.origin}/up`, {
          method: 'POST',
          body: failing() as never,
          dispatcher: agent,
        }),
      ).rejects.toThrow('upload failed');
    }
    // 5 × 40 bytes failed: with the bytes given back, a 40-byte stream still fits and is hedged.
    async function* whole() {
      yield new TextEncoder().encode('x'.repeat(40));
    }
    const pending = undici.request(`${primary.origin}/up`, {
      method: 'POST',
      body: whole() as never,
      dispatcher: agent,
    });
    await waitFor(() => primary.seen.length === 1 && primary.seen[0]?.body.length === 40);
    await clock.advance(10);
    expect(await (await pending).body.text()).toBe('ok from backup');
    expect(backup.seen[0]?.body.toString()).toBe('x'.repeat(40));
    await agent.close();
  });
});

describe('the caller’s abort while a stream body is buffered', () => {
  it('rejects at once with the caller’s reason, and gives the bytes back (hedge() and fetch)', async () => {
    const primary = await replica('primary', () => ({ hold: true }));
    const backup = await replica('backup');
    const clock = new VirtualClock();
    const routes = [
      {
        name: 'r',
        replicas: [primary.origin, backup.origin],
        idempotent: true,
        hedge: { initialDelayMs: 10 },
      },
    ];
    const interceptor = hedge({
      routes,
      budget: { ratio: 1, minPerSecond: 0 },
      maxTotalBufferedBytes: 100,
      clock,
    });
    const agent = new undici.Agent().compose(interceptor);
    async function* stalled() {
      yield new Uint8Array(60);
      await new Promise(() => {});
    }
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const pending = undici.request(`${primary.origin}/up`, {
        method: 'POST',
        body: stalled() as never,
        dispatcher: agent,
        signal: controller.signal,
      });
      const reason = new Error(`caller gave up ${i}`);
      setImmediate(() => controller.abort(reason));
      await expect(pending).rejects.toBe(reason);
    }
    // 3 × 60 bytes were held by stalled uploads: with them given back, 60 bytes still fit.
    async function* whole() {
      yield new Uint8Array(60);
    }
    const pending = undici.request(`${primary.origin}/up`, {
      method: 'POST',
      body: whole() as never,
      dispatcher: agent,
    });
    await waitFor(() => primary.seen.length === 1);
    await clock.advance(10);
    expect(await (await pending).body.text()).toBe('ok from backup');
    await agent.close();
    expect(primary.seen).toHaveLength(1);
  });
});

describe('Idempotency-Key across retries', () => {
  it('compose(hedge(), retry()): every retry of one request sends the same key', async () => {
    let n = 0;
    const r = await replica('r', () => (n++ < 2 ? { status: 500 } : {}));
    const agent = new undici.Agent().compose(
      hedge({ routes: [{ name: 'r', idempotent: true, hedge: false }] }),
      undici.interceptors.retry({
        methods: ['POST'],
        statusCodes: [500],
        minTimeout: 1,
        maxRetries: 3,
      }),
    );
    const res = await undici.request(`${r.origin}/x`, {
      method: 'POST',
      body: 'b',
      dispatcher: agent,
    });
    await res.body.dump();
    const keys = r.seen.map((s) => s.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    // Another request gets a key of its own.
    await (
      await undici.request(`${r.origin}/x`, { method: 'POST', body: 'b', dispatcher: agent })
    ).body.dump();
    expect(r.seen[3]?.headers['idempotency-key']).not.toBe(keys[0]);
    await agent.close();
  });
});

describe('close()', () => {
  it('can be called again', async () => {
    const hf = createHedgedFetch({ routes: [] });
    await hf.close();
    await hf.close();
    await Promise.all([hf.close(), hf.close()]);
  });

  it('completes a call started in the same tick as close() (no UND_ERR_CLOSED)', async () => {
    const r = await replica('r');
    for (const body of [undefined, 'text', new FormData()]) {
      const hf = createHedgedFetch({ routes: [{ name: 'r', idempotent: true }] });
      const pending = hf(`${r.origin}/x`, { method: 'POST', body: body ?? null });
      const closing = hf.close();
      const res = await pending;
      expect(await res.text()).toBe('ok from r');
      await closing;
      await expect(hf(`${r.origin}/x`)).rejects.toMatchObject({ code: 'TAILCUT_CLOSED' });
    }
  });
});

describe('Response fidelity', () => {
  it('gives back undici’s own Response, with a signal too (byte stream, basic, immutable headers, clone)', async () => {
    const r = await replica('r');
    const hf = createHedgedFetch({ routes: [{ name: 'r' }] });
    for (const signal of [undefined, new AbortController().signal]) {
      const res = await hf(`${r.origin}/x`, signal === undefined ? {} : { signal });
      const plain = await undici.fetch(`${r.origin}/x`);
      expect(res.constructor).toBe(plain.constructor);
      expect(res.type).toBe(plain.type);
      expect(() => res.headers.set('x', '1')).toThrow(TypeError);
      const copy = res.clone();
      expect(copy.url).toBe(`${r.origin}/x`);
      expect(copy.redirected).toBe(false);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader({ mode: 'byob' });
      const { value } = await reader.read(new Uint8Array(64));
      expect(new TextDecoder().decode(value)).toBe('ok from r');
      reader.releaseLock();
      await copy.text();
      await plain.text();
    }
    await hf.close();
  });

  it("keeps a Node Request's integrity: a mismatch rejects as with plain fetch", async () => {
    const r = await replica('r');
    const hf = createHedgedFetch({ routes: [{ name: 'r' }] });
    const good = `sha256-${createHash('sha256').update('ok from r').digest('base64')}`;
    const ok = await hf(new Request(`${r.origin}/x`, { integrity: good }));
    expect(await ok.text()).toBe('ok from r');
    await expect(
      hf(
        new Request(`${r.origin}/x`, {
          integrity: 'sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
        }),
      ),
    ).rejects.toThrow();
    await hf.close();
  });
});

describe('hedges whose dispatch failed at once', () => {
  it('are not counted as sent and spend no token', async () => {
    const primary = await replica('primary', () => ({ hold: true }));
    const gone = new undici.Agent();
    await gone.close();
    const unreachable = 'http://127.0.0.1:9';
    const clock = new VirtualClock();
    const interceptor = hedge({
      routes: [
        { name: 'r', replicas: [primary.origin, unreachable], hedge: { initialDelayMs: 10 } },
      ],
      budget: { ratio: 0, minPerSecond: 1, ttlMs: 10_000 },
      clock,
    });
    // The hedge's replica is served by a closed Agent: its dispatch fails at once.
    const agent = new undici.Agent().compose(
      (dispatch) => (opts, handler) =>
        String(opts.origin) === unreachable
          ? gone.dispatch(opts, handler)
          : dispatch(opts, handler),
      interceptor,
    );
    const tokensBefore = interceptor.stats().budget.tokens;
    const pending = undici.request(`${primary.origin}/x`, { dispatcher: agent });
    await waitFor(() => primary.seen.length === 1);
    await clock.advance(10);
    primary.release();
    const res = await pending;
    expect(await res.body.text()).toBe('ok from primary');
    const stats = interceptor.stats();
    expect(stats.routes.r).toMatchObject({ hedgesSent: 0, attempts: 2 });
    expect(stats.budget).toMatchObject({ granted: 0, tokens: tokensBefore, inFlightHedges: 0 });
    await agent.close();
  });
});
