import { afterEach, describe, expect, it } from 'vitest';
import { adapters, type Client } from './support/adapters.js';
import { type Replica, serve, startReplica, until } from './support/replica.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

for (const adapter of adapters) {
  describe(adapter.name, () => {
    async function pair(): Promise<[Replica, Replica, Client['fetch']]> {
      const a = await startReplica('a', () => ({ delayMs: 300 }));
      const b = await startReplica('b', () => ({ delayMs: 300 }));
      const c = adapter.create({
        routes: [
          {
            name: 'r',
            replicas: [a.origin, b.origin],
            hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
          },
        ],
      });
      open.push(a, b, c);
      return [a, b, c.fetch];
    }

    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    describe('caller abort over loopback', () => {
      it('an already-aborted signal rejects with its reason and sends nothing', async () => {
        const [a, b, f] = await pair();
        const reason = new Error('already aborted');
        await expect(f(`${a.origin}/x`, { signal: AbortSignal.abort(reason) })).rejects.toBe(
          reason,
        );
        await sleep(20);
        expect(a.seen.length + b.seen.length).toBe(0);
      });

      for (const [phase, at, expected] of [
        ['while waiting for the hedge delay', 10, 1],
        ['after the hedge is sent', 80, 2],
      ] as const) {
        it(`abort ${phase}: rejects with the reason, every attempt is closed, none starts later`, async () => {
          const [a, b, f] = await pair();
          const controller = new AbortController();
          const reason = new Error(`stop ${phase}`);
          const call = f(`${a.origin}/x`, { signal: controller.signal });
          await sleep(at);
          controller.abort(reason);
          await expect(call).rejects.toBe(reason);
          const seen = [...a.seen, ...b.seen];
          await until(() => seen.every((s) => s.abortedAt !== undefined));
          await sleep(60);
          expect(a.seen.length + b.seen.length).toBe(expected);
          expect(a.inFlight() + b.inFlight()).toBe(0);
        });
      }

      it('abort after commit, while the body is read: the read rejects with the reason', async () => {
        let closedAt = 0;
        const server = await serve((_req, res) => {
          res.writeHead(200);
          res.write('first chunk;');
          const t = setInterval(() => res.write('more;'), 20);
          res.on('close', () => {
            clearInterval(t);
            closedAt = performance.now();
          });
        });
        open.push(server);
        const origin = server.origin;
        const c = adapter.create({ routes: [{ name: 'r', hedge: { initialDelayMs: 1000 } }] });
        open.push(c);
        const f = c.fetch;
        const controller = new AbortController();
        const reason = new Error('user navigated away');
        const res = await f(`${origin}/stream`, { signal: controller.signal });
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        expect(new TextDecoder().decode((await reader.read()).value)).toContain('first chunk');
        controller.abort(reason);
        const abortedAt = performance.now();
        await expect(reader.read()).rejects.toBe(reason);
        await until(() => closedAt > 0);
        expect(closedAt - abortedAt).toBeLessThan(100);
      });
    });

    describe('resources', () => {
      it('leaves no timer behind after calls settle, and no socket after close()', async () => {
        const baseTimers = timers();
        const baseSockets = process
          .getActiveResourcesInfo()
          .filter((r) => r === 'TCPSocketWrap').length;
        const a = await startReplica('a', (n) => ({ delayMs: n % 3 === 0 ? 120 : 2 }));
        const b = await startReplica('b', (n) => ({ delayMs: n % 4 === 0 ? 120 : 3 }));
        const c = adapter.create({
          routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: { initialDelayMs: 20 } }],
          budget: { ratio: 1 },
        });
        const f = c.fetch;
        const shared = new AbortController();
        const calls = Array.from({ length: 60 }, async (_, i) => {
          const own = i % 5 === 0 ? AbortSignal.timeout(50) : shared.signal;
          try {
            const res = await f(`${a.origin}/x`, { signal: own });
            await res.text();
          } catch {
            // Timed-out calls reject; that is part of the run.
          }
        });
        await sleep(5);
        expect(timers()).toBeGreaterThan(baseTimers);
        await Promise.all(calls);
        await sleep(10);
        expect(timers()).toBeLessThanOrEqual(baseTimers);
        expect(c.stats().routes.r?.hedgesSent).toBeGreaterThan(0);
        await c.close();
        await a.close();
        await b.close();
        await until(
          () =>
            process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length <=
            baseSockets,
        );
      });
    });
  });
}
