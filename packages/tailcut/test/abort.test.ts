import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import { adapters, type Client } from './support/adapters.js';
import { type Replica, serve, startReplica } from './support/replica.js';
import {
  activeSockets,
  activeTimers,
  countingClock,
  describeResources,
  waitFor,
} from './support/wait.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

for (const adapter of adapters) {
  describe(adapter.name, () => {
    /**
     * Two replicas that hold every answer (the test aborts first), and a client on a virtual
     * clock: the hedge delay (30 ms) passes only when the test advances the clock, so whether
     * the hedge was sent before the abort does not depend on the machine's speed.
     */
    async function pair() {
      const hold = (_n: number, seen: { url: string }) =>
        seen.url === '/sentinel' ? {} : { hold: true };
      const a = await startReplica('a', hold);
      const b = await startReplica('b', hold);
      const clock = new VirtualClock();
      const c = adapter.create({
        routes: [
          {
            name: 'r',
            replicas: [a.origin, b.origin],
            hedge: { initialDelayMs: 30, minSamples: 1_000_000 },
          },
        ],
        clock,
      });
      open.push(a, b, c);
      return { a, b, f: c.fetch as Client['fetch'], clock };
    }

    /** Requests the replicas saw, other than the sentinels. */
    const sent = (...replicas: Replica[]) =>
      replicas.flatMap((r) => r.seen).filter((s) => s.url !== '/sentinel');

    /**
     * One plain request to each replica, answered at once: anything the client had already put
     * on the wire when this is called has reached the replicas by the time it resolves.
     */
    const sentinel = (...replicas: Replica[]) =>
      Promise.all(replicas.map(async (r) => (await fetch(`${r.origin}/sentinel`)).text()));

    describe('caller abort over loopback', () => {
      it('an already-aborted signal rejects with its reason and sends nothing', async () => {
        const { a, b, f, clock } = await pair();
        const reason = new Error('already aborted');
        await expect(f(`${a.origin}/x`, { signal: AbortSignal.abort(reason) })).rejects.toBe(
          reason,
        );
        // Nothing is scheduled to send it later, nothing does once the hedge delay has passed,
        // and nothing was on its way to a replica.
        expect(clock.pending).toBe(0);
        await clock.advance(10_000);
        await sentinel(a, b);
        expect(sent(a, b)).toHaveLength(0);
      });

      for (const [phase, attempts] of [
        ['while waiting for the hedge delay', 1],
        ['after the hedge is sent', 2],
      ] as const) {
        it(`abort ${phase}: rejects with the reason, every attempt is closed, none starts later`, async () => {
          const { a, b, f, clock } = await pair();
          const controller = new AbortController();
          const reason = new Error(`stop ${phase}`);
          const call = f(`${a.origin}/x`, { signal: controller.signal });
          call.catch(() => {}); // awaited below; no unhandled rejection if a wait fails first
          for (let k = 1; k <= attempts; k++) {
            // The hedge is sent when its delay has passed on the client's clock.
            if (k > 1) await clock.advance(30);
            await waitFor(() => a.holding() + b.holding() === k, {
              message: () => `${k} attempt(s) held at the replicas; saw ${sent(a, b).length}`,
            });
          }
          controller.abort(reason);
          await expect(call).rejects.toBe(reason);
          const seen = sent(a, b);
          expect(seen).toHaveLength(attempts);
          await waitFor(() => seen.every((s) => s.abortedAt !== undefined), {
            message: 'every attempt closed at its replica',
          });
          expect(a.inFlight() + b.inFlight()).toBe(0);
          // None starts later: no timer is left to start one, and none does once any delay has
          // passed.
          expect(clock.pending).toBe(0);
          await clock.advance(10_000);
          await sentinel(a, b);
          expect(sent(a, b)).toHaveLength(attempts);
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
        // The server writes until the connection closes: it closing at all is the abort's doing.
        await waitFor(() => closedAt > 0, {
          message: 'the server saw the connection close after the abort',
        });
        expect(closedAt).toBeGreaterThanOrEqual(abortedAt);
      });
    });

    describe('resources', () => {
      it('leaves no timer behind after calls settle, and no socket after close()', async () => {
        const baseTimers = activeTimers();
        const baseSockets = activeSockets();
        const a = await startReplica('a', (n) => ({ delayMs: n % 3 === 0 ? 120 : 2 }));
        const b = await startReplica('b', (n) => ({ delayMs: n % 4 === 0 ? 120 : 3 }));
        // The real clock, counting the client's own timers: exact, whatever else has timers.
        const clock = countingClock();
        const c = adapter.create({
          routes: [{ name: 'r', replicas: [a.origin, b.origin], hedge: { initialDelayMs: 20 } }],
          budget: { ratio: 1 },
          clock,
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
        await Promise.all(calls);
        // The count is not vacuous: calls in flight held hedge timers...
        expect(clock.mostPending()).toBeGreaterThan(0);
        // ...and every timer of the client is cleared by the time its call settles...
        expect(clock.pending()).toBe(0);
        // ...and the process's timers (sockets', AbortSignal.timeout's too) return to the baseline.
        await waitFor(() => activeTimers() <= baseTimers, {
          message: () => `timers back to ${baseTimers}; active: ${describeResources()}`,
        });
        expect(c.stats().routes.r?.hedgesSent).toBeGreaterThan(0);
        await c.close();
        await a.close();
        await b.close();
        await waitFor(() => activeSockets() <= baseSockets, {
          message: () => `sockets back to ${baseSockets}; active: ${describeResources()}`,
        });
      });
    });
  });
}
