/**
 * 20,000 calls with hedges and aborts, every call passing one long-lived signal: the signal
 * keeps no listener, no MaxListenersExceededWarning, the heap and handles come back to their
 * baseline, and the pool's sockets stay bounded.
 */
import { getEventListeners } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createHedgedFetch } from 'tailcut';
import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import { describeResources, waitFor } from '../packages/tailcut/test/support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('leaks', () => {
  it('20,000 calls with one shared signal leave nothing behind', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    let n = 0;
    const make = () =>
      createServer((_req, res) => {
        // 4% of answers are slow, so hedges fire and losers are aborted.
        const slow = ++n % 25 === 0;
        const t = setTimeout(() => res.end('ok'), slow ? 80 : 0);
        res.on('close', () => clearTimeout(t));
      });
    const servers = [make(), make()];
    for (const s of servers) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const origins = servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`);
    const dispatcher = new Agent({ connections: 64 });
    const f = createHedgedFetch({
      routes: [{ name: 'r', replicas: origins, hedge: { initialDelayMs: 20, minSamples: 1e6 } }],
      budget: { ratio: 1 },
      dispatcher,
    });
    const shared = new AbortController();
    const handles = () => process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap').length;

    const run = async (calls: number) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < calls) {
            const i = next++;
            // Every 100th call has a short deadline of its own instead (a caller abort mid-flight).
            const signal = i % 100 === 0 ? AbortSignal.timeout(5) : shared.signal;
            try {
              await (await f(`${origins[0]}/x`, { signal })).text();
            } catch {
              // the short-deadline calls may time out
            }
          }
        }),
      );
    };
    // Collect, and let finalizers and timers run, a few times over.
    const settle = async () => {
      for (let k = 0; k < 5; k++) {
        gc();
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await run(2_000); // warm-up: pools, JIT
    await settle();
    const heapBefore = process.memoryUsage().heapUsed;
    const handlesBefore = handles();
    const resourcesBefore = describeResources();
    await run(20_000);
    const stats = f.stats().routes.r;
    expect(stats?.hedgesSent).toBeGreaterThan(100);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toHaveLength(0);
    const pools = () =>
      Object.values(dispatcher.stats) as unknown as { connected: number; running: number }[];
    for (const pool of pools()) expect(pool.connected).toBeLessThanOrEqual(64);
    // Coming back to the baseline takes a while: undici's fetch lets go of some per-call memory
    // only after a few seconds (finalizers and timers), sockets close on their keep-alive
    // timeouts, and all of it is later on a busy machine. Wait for each, collecting as we go,
    // up to a deadline far beyond what a healthy run needs.
    const slowly = { timeoutMs: 30_000, intervalMs: 100 };
    const collect = async () => {
      gc();
      await new Promise((r) => setImmediate(r)); // finalizers run after the collection
    };
    // A call leaves the signal's one listener when its response body is collected.
    await waitFor(
      async () => {
        await collect();
        return getEventListeners(shared.signal, 'abort').length === 0;
      },
      {
        ...slowly,
        message: () =>
          `no abort listener left on the shared signal (${getEventListeners(shared.signal, 'abort').length} now)`,
      },
    );
    await waitFor(() => pools().every((p) => p.running === 0), {
      ...slowly,
      message: () => `the pools are idle: ${JSON.stringify(pools())}`,
    });
    let heapAfter = 0;
    await waitFor(
      async () => {
        await collect();
        heapAfter = process.memoryUsage().heapUsed;
        return heapAfter - heapBefore < 16 * 1024 * 1024;
      },
      {
        ...slowly,
        intervalMs: 250,
        message: () => `heap back within 16 MiB of ${heapBefore} bytes: ${heapAfter} now`,
      },
    );
    await waitFor(() => handles() <= handlesBefore + 4, {
      ...slowly,
      message: () =>
        `handles back to ${handlesBefore} + 4 (${resourcesBefore}); now ${handles()} (${describeResources()})`,
    });
    for (const pool of pools()) expect(pool.connected).toBeLessThanOrEqual(64);
    process.off('warning', onWarning);
    await f.close();
    await dispatcher.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  }, 120_000);
});
