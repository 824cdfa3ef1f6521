import { createHash } from 'node:crypto';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type HedgeInterceptorOptions, hedge } from '../src/index.js';
import { type Behaviour, serve as serveRaw, startReplica, until } from './support/replica.js';

async function serve(handler: Parameters<typeof serveRaw>[0]) {
  const s = await serveRaw(handler);
  open.push(s);
  return s;
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function replica(name: string, behave?: (n: number) => Behaviour) {
  const r = await startReplica(name, behave);
  open.push(r);
  return r;
}

function agentWith(
  options: HedgeInterceptorOptions,
  ...more: undici.Dispatcher.DispatcherComposeInterceptor[]
) {
  const interceptor = hedge(options);
  const agent = new undici.Agent({ keepAliveTimeout: 10_000 }).compose(interceptor, ...more);
  open.push(agent);
  return { interceptor, agent };
}

const fixed = { initialDelayMs: 30, minSamples: 1_000_000 };

describe('hedge() interceptor', () => {
  it('hedges undici.request to the other replica with that origin’s Host header', async () => {
    const a = await replica('a', (n) => (n === 0 ? { delayMs: 400 } : {}));
    const b = await replica('b');
    const { agent, interceptor } = agentWith({
      routes: [
        { name: 'embed', match: { path: '/v1/*' }, replicas: [a.origin, b.origin], hedge: fixed },
      ],
    });
    const res = await undici.request(`${a.origin}/v1/embeddings?x=1`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-replica']).toBe('b');
    expect(await res.body.text()).toBe('ok from b');
    expect(b.seen[0]?.url).toBe('/v1/embeddings?x=1');
    expect(b.seen[0]?.headers.host).toBe(new URL(b.origin).host);
    expect(a.seen[0]?.headers.host).toBe(new URL(a.origin).host);
    expect(interceptor.stats().routes.embed).toMatchObject({
      calls: 1,
      hedgesSent: 1,
      hedgesWon: 1,
    });
  });

  it('replays a Buffer body and keeps the Idempotency-Key on an idempotent POST', async () => {
    const a = await replica('a', (n) => (n === 0 ? { delayMs: 400 } : {}));
    const b = await replica('b');
    const { agent } = agentWith({
      routes: [{ name: 'r', replicas: [a.origin, b.origin], idempotent: true, hedge: fixed }],
    });
    const body = Buffer.from(JSON.stringify({ input: 'x'.repeat(1000) }));
    const res = await undici.request(`${a.origin}/v1/x`, {
      method: 'POST',
      body,
      dispatcher: agent,
    });
    await res.body.text();
    expect(b.seen[0]?.body.equals(body)).toBe(true);
    expect(a.seen[0]?.body.equals(body)).toBe(true);
    expect(b.seen[0]?.headers['idempotency-key']).toBe(a.seen[0]?.headers['idempotency-key']);
  });

  it('as the global dispatcher, hedges undici.fetch and Node’s own global fetch', async () => {
    const a = await replica('a', () => ({ delayMs: 400 }));
    const b = await replica('b');
    const { agent, interceptor } = agentWith({
      // a is slow: the first call (primary a) is won by its hedge to b, the second goes to b.
      routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: fixed }],
    });
    const previous = undici.getGlobalDispatcher();
    undici.setGlobalDispatcher(agent);
    try {
      const viaUndici = await undici.fetch(`${a.origin}/one`);
      expect(await viaUndici.text()).toBe('ok from b');
      const viaGlobal = await globalThis.fetch(`${a.origin}/two`);
      expect(await viaGlobal.text()).toBe('ok from b');
      expect(interceptor.stats().routes.r).toMatchObject({ calls: 2, hedgesWon: 1 });
    } finally {
      undici.setGlobalDispatcher(previous);
    }
  });

  it('passes back-pressure through: a paused caller stops a large winning body at the server', async () => {
    const total = 32 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 7);
    let written = 0;
    const big = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(total) });
      const pump = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const slow = await replica('slow', () => ({ delayMs: 2000 }));
    const { agent } = agentWith({
      routes: [{ name: 'r', replicas: [slow.origin, big.origin], hedge: fixed }],
    });
    const res = await undici.request(`${slow.origin}/big`, { dispatcher: agent });
    await new Promise((r) => setTimeout(r, 300));
    const writtenWhilePaused = written;
    expect(writtenWhilePaused).toBeLessThan(total / 2);
    const hash = createHash('sha256');
    let received = 0;
    for await (const part of res.body) {
      received += part.length;
      hash.update(part);
    }
    expect(received).toBe(total);
    expect(hash.digest('hex')).toBe(
      createHash('sha256').update(Buffer.alloc(total, 7)).digest('hex'),
    );
  });

  it('an abort mid-body errors the body with the reason and closes the connection', async () => {
    let closed = false;
    const stream = await serve((_req, res) => {
      res.writeHead(200);
      res.write('first;');
      const t = setInterval(() => res.write('more;'), 10);
      res.on('close', () => {
        clearInterval(t);
        closed = true;
      });
    });
    const { agent } = agentWith({ routes: [{ name: 'r', hedge: { initialDelayMs: 1000 } }] });
    const controller = new AbortController();
    const reason = new Error('caller stopped reading');
    const res = await undici.request(`${stream.origin}/s`, {
      dispatcher: agent,
      signal: controller.signal,
    });
    const iterator = res.body[Symbol.asyncIterator]();
    expect(String((await iterator.next()).value)).toContain('first;');
    controller.abort(reason);
    await expect(
      (async () => {
        for (;;) if ((await iterator.next()).done) return;
      })(),
    ).rejects.toBe(reason);
    await until(() => closed);
  });

  it('keeps connections alive after losers are aborted, and the pool returns to idle', async () => {
    let connections = 0;
    let slow = true;
    const make = async (name: string, slowEvery: number) => {
      let n = 0;
      const s = await serve((_req, res) => {
        const delay = slow && ++n % slowEvery === 0 ? 300 : 2;
        const t = setTimeout(() => res.end(name), delay);
        res.on('close', () => clearTimeout(t));
      });
      s.server.on('connection', () => {
        connections++;
      });
      return s.origin;
    };
    const a = await make('a', 4);
    const b = await make('b', 1_000_000);
    const { agent, interceptor } = agentWith({
      routes: [{ name: 'r', replicas: [a, b], hedge: fixed }],
      budget: { ratio: 1 },
    });
    const run = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await undici.request(`${a}/k`, { dispatcher: agent });
        await res.body.text();
      }
    };
    await run(24);
    expect(interceptor.stats().routes.r?.hedgesWon).toBeGreaterThan(0);
    // Sequential calls on undici alternate between at most two sockets per origin (a socket is
    // released a tick after its body ends), so after the hedged phase a healthy pool opens at most
    // that many: aborted losers did not leave it broken.
    slow = false;
    const before = connections;
    await run(20);
    expect(connections - before).toBeLessThanOrEqual(4);
    const pools = Object.values((agent as unknown as undici.Agent).stats) as unknown as {
      running: number;
      pending: number;
      connected: number;
    }[];
    expect(pools).toHaveLength(2);
    for (const pool of pools) {
      expect(pool.running).toBe(0);
      expect(pool.pending).toBe(0);
      expect(pool.connected).toBeLessThanOrEqual(2);
    }
  });

  describe('composition with undici’s retry interceptor', () => {
    // Both replicas fail their first two requests with 503, then answer.
    const flaky = (n: number): Behaviour => (n < 2 ? { status: 503 } : {});
    const retry = () =>
      undici.interceptors.retry({ maxRetries: 3, minTimeout: 5, timeoutFactor: 1 });

    it('retry outside hedge (compose(hedge(), retry())): every attempt is a hedged race tailcut counts', async () => {
      const a = await replica('a', flaky);
      const b = await replica('b', flaky);
      const { agent, interceptor } = agentWith(
        {
          routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: fixed }],
          budget: { ratio: 1 },
        },
        retry(),
      );
      const res = await undici.request(`${a.origin}/x`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      const served = a.seen.length + b.seen.length;
      const s = interceptor.stats().routes.r;
      // Each retry is a new hedged call: a 503 sends the other replica at once, and every
      // request a server saw is an attempt tailcut counted (and its budget paid for).
      expect(s?.calls).toBeGreaterThanOrEqual(2);
      expect(s?.attempts).toBe(served);
    });

    it('retry inside hedge (compose(retry(), hedge())): retries hide from the engine and its budget', async () => {
      const a = await replica('a', flaky);
      const b = await replica('b', flaky);
      const interceptor = hedge({
        routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: fixed }],
        budget: { ratio: 1 },
      });
      const agent = new undici.Agent().compose(retry(), interceptor);
      open.push(agent);
      const res = await undici.request(`${a.origin}/x`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      const served = a.seen.length + b.seen.length;
      const s = interceptor.stats().routes.r;
      expect(s?.calls).toBe(1);
      expect(served).toBeGreaterThan(s?.attempts ?? 0);
    });
  });
});
