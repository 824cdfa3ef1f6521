import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import { type HedgeInterceptorOptions, hedge } from '../src/index.js';
import { type Behaviour, serve as serveRaw, startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

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

/** The first request is held until the client gives up on it: only a hedge can answer. */
const heldThenFast = (n: number): Behaviour => (n === 0 ? { hold: true } : {});

describe('hedge() interceptor', () => {
  it('hedges undici.request to the other replica with that origin’s Host header', async () => {
    const a = await replica('a', heldThenFast);
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
    const a = await replica('a', heldThenFast);
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
    const a = await replica('a', () => ({ hold: true }));
    const b = await replica('b');
    const { agent, interceptor } = agentWith({
      // a never answers: the first call (primary a) is won by its hedge to b, the second goes to b.
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
    let blocked = false;
    const big = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(total) });
      const pump = () => {
        blocked = false;
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            blocked = true;
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const slow = await replica('slow', () => ({ hold: true }));
    const { agent } = agentWith({
      routes: [{ name: 'r', replicas: [slow.origin, big.origin], hedge: fixed }],
    });
    const res = await undici.request(`${slow.origin}/big`, { dispatcher: agent });
    // While the caller does not read, the server's writes stall: wait until it has been waiting
    // for 'drain' with no progress for ten checks in a row (or has written everything, which
    // fails below).
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        if (written >= total) return true;
        still = blocked && written === last ? still + 1 : 0;
        last = written;
        return still >= 10;
      },
      { intervalMs: 20, message: () => `the server stalled on back-pressure (wrote ${written})` },
    );
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
    await waitFor(() => closed, { message: 'the server saw the connection close' });
  });

  it('keeps connections alive after losers are aborted, and the pool returns to idle', async () => {
    // Hedge delays pass only when the test moves the client's clock: in the first phase, a's
    // every fourth request is held and hedged; in the second, nothing is held and no hedge can fire.
    let connections = 0;
    let hedging = true;
    const clock = new VirtualClock();
    const make = async (name: string, holdEvery: number) => {
      let n = 0;
      const held = new Set<ServerResponse>();
      const s = await serve((_req, res) => {
        if (hedging && ++n % holdEvery === 0) {
          held.add(res);
          res.on('close', () => held.delete(res));
          return;
        }
        const t = setTimeout(() => res.end(name), 2);
        res.on('close', () => clearTimeout(t));
      });
      s.server.on('connection', () => {
        connections++;
      });
      return { origin: s.origin, held: () => held.size };
    };
    const a = await make('a', 4);
    const b = await make('b', 1_000_000);
    const { agent, interceptor } = agentWith({
      routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: fixed }],
      budget: { ratio: 1 },
      clock,
    });
    const run = async (n: number) => {
      for (let i = 0; i < n; i++) {
        let done = false;
        const call = undici.request(`${a.origin}/k`, { dispatcher: agent }).then(async (res) => {
          await res.body.text();
          done = true;
        });
        await waitFor(() => done || a.held() > 0, { message: 'the call answered or was held' });
        if (!done) {
          await clock.advance(fixed.initialDelayMs); // the held primary is hedged to b
          await call;
          await waitFor(() => a.held() === 0, { message: 'the losing primary was aborted' });
        }
        await call;
      }
    };
    await run(24);
    expect(interceptor.stats().routes.r?.hedgesWon).toBeGreaterThan(0);
    // Sequential calls on undici alternate between at most two sockets per origin (a socket is
    // released a tick after its body ends), so after the hedged phase a healthy pool opens at most
    // that many: aborted losers did not leave it broken.
    hedging = false;
    const before = connections;
    await run(20);
    expect(connections - before).toBeLessThanOrEqual(4);
    const pools = () =>
      Object.values((agent as unknown as undici.Agent).stats) as unknown as {
        running: number;
        pending: number;
        connected: number;
      }[];
    expect(pools()).toHaveLength(2);
    await waitFor(() => pools().every((p) => p.running === 0 && p.pending === 0), {
      message: () => `the pools returned to idle: ${JSON.stringify(pools())}`,
    });
    for (const pool of pools()) expect(pool.connected).toBeLessThanOrEqual(2);
  });

  describe('composition with undici’s retry interceptor', () => {
    // Both replicas fail their first two requests with 503, then answer.
    const flaky = (n: number): Behaviour => (n < 2 ? { status: 503 } : {});
    const retry = () =>
      undici.interceptors.retry({ maxRetries: 3, minTimeout: 5, timeoutFactor: 1 });

    it('retry outside hedge (compose(hedge(), retry())): every attempt is a hedged race tailcut counts', async () => {
      const a = await replica('a', flaky);
      const b = await replica('b', flaky);
      // The client's clock stands still: attempts come from the 503s only, never from a hedge
      // delay passing (one the servers might not see before the call ends).
      const { agent, interceptor } = agentWith(
        {
          routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: fixed }],
          budget: { ratio: 1 },
          clock: new VirtualClock(),
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
        clock: new VirtualClock(),
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
