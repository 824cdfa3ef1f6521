/**
 * Fault injection over loopback: for each way a replica can fail, the call settles within its
 * deadline (the healthy replica answers, or a clear error), and no attempt is left running.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHedgedFetch, type HedgedFetch } from 'tailcut';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../packages/tailcut/test/support/wait.js';
import { type Fault, startFaultServer } from './support/faults.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function healthy(
  delayMs = 5,
): Promise<{ origin: string; inFlight: () => number; count: () => number }> {
  let inFlight = 0;
  let count = 0;
  const server: Server = createServer((_req, res) => {
    inFlight++;
    count++;
    const t = setTimeout(() => res.end('healthy'), delayMs);
    res.on('close', () => {
      clearTimeout(t);
      inFlight--;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push({
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    inFlight: () => inFlight,
    count: () => count,
  };
}

async function faulty(f: (n: number) => Fault) {
  const s = await startFaultServer(f);
  open.push(s);
  return s;
}

function client(replicas: string[], extra: Record<string, unknown> = {}): HedgedFetch {
  const f = createHedgedFetch({
    routes: [{ name: 'r', replicas, hedge: { initialDelayMs: 50, minSamples: 1e6 }, ...extra }],
    budget: { ratio: 1 },
  });
  open.push(f);
  return f;
}

/** Calls through the fault server first (round robin starts there), with a deadline. */
async function call(f: HedgedFetch, origin: string, deadlineMs: number) {
  const started = performance.now();
  try {
    const res = await f(`${origin}/x`, { signal: AbortSignal.timeout(deadlineMs) });
    const text = await res.text();
    return { ok: true as const, text, status: res.status, ms: performance.now() - started };
  } catch (error) {
    return { ok: false as const, error, ms: performance.now() - started };
  }
}

describe('faults at the primary: the hedge or the retry answers, nothing left running', () => {
  // The hedge delay: 50 ms where the hedge is what answers; where the fault itself must send the
  // next attempt at once, a delay longer than the call's deadline, so that no hedge can answer.
  const cases: [Fault, string, number][] = [
    [
      'reset-before-headers',
      'reset before headers: retried at once on the healthy replica',
      60_000,
    ],
    ['never-answers', 'accepts and never answers: the hedge answers after the delay', 50],
    ['malformed-status', 'malformed status line: a network error, retried at once', 60_000],
  ];
  for (const [fault, title, initialDelayMs] of cases) {
    it(title, async () => {
      const bad = await faulty(() => fault);
      const good = await healthy();
      const f = client([bad.origin, good.origin], { hedge: { initialDelayMs, minSamples: 1e6 } });
      const r = await call(f, bad.origin, 5000);
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.text).toBe('healthy');
      if (fault === 'never-answers') {
        await waitFor(() => bad.openSockets() === 0, { message: 'the silent primary was closed' });
      }
      await waitFor(() => good.inFlight() === 0, { message: 'nothing left running' });
      expect(bad.requests()).toBe(1);
      expect(good.count()).toBe(1);
    });
  }

  it('headers then a stalled body, committing on the first byte: the hedge wins', async () => {
    const bad = await faulty(() => 'stalled-body');
    const good = await healthy();
    const f = client([bad.origin, good.origin], { commitOn: 'first-byte' });
    const r = await call(f, bad.origin, 2000);
    expect(r.ok && r.text).toBe('healthy');
    await waitFor(() => bad.openSockets() === 0, { message: 'the stalled primary was closed' });
  });
});

describe('faults after commit: the caller gets a clear error within its deadline', () => {
  const cases: [Fault, string][] = [
    ['reset-mid-body', 'reset mid-body'],
    ['stalled-body', 'headers then a stalled body (committed on headers)'],
    ['truncated-body', 'truncated body (content-length mismatch)'],
  ];
  for (const [fault, title] of cases) {
    it(title, async () => {
      const bad = await faulty(() => fault);
      const good = await healthy();
      const f = client([bad.origin, good.origin], {
        hedge: { initialDelayMs: 1000, minSamples: 1e6 },
      });
      const r = await call(f, bad.origin, 500);
      expect(r.ok).toBe(false);
      // Within the 500 ms deadline, give or take a busy machine's timer lag: not held until
      // some much later timeout.
      expect(r.ms).toBeLessThan(2000);
      await waitFor(() => bad.openSockets() === 0, { message: 'the faulty socket was closed' });
      expect(good.count()).toBe(0);
    });
  }

  it('a slow-trickle body is read whole when the deadline allows', async () => {
    const bad = await faulty(() => 'trickle-body');
    const f = client([bad.origin], { hedge: { initialDelayMs: 5000, minSamples: 1e6 } });
    // 20 bytes, 100 ms apart: about 2 s, well within the deadline even on a busy machine.
    const r = await call(f, bad.origin, 15_000);
    expect(r.ok && r.text).toBe('x'.repeat(20));
  });

  it('a slow-trickle body past the deadline rejects, and the socket is closed', async () => {
    const bad = await faulty(() => 'trickle-body');
    const f = client([bad.origin], { hedge: { initialDelayMs: 5000, minSamples: 1e6 } });
    const r = await call(f, bad.origin, 300);
    expect(r.ok).toBe(false);
    expect((r as { error: Error }).error.name).toBe('TimeoutError');
    await waitFor(() => bad.openSockets() === 0, { message: 'the trickling socket was closed' });
  });
});

describe('whole-fleet faults', () => {
  it('every replica down (refused): rejects fast with the network error', async () => {
    const a = await faulty(() => 'ok');
    const b = await faulty(() => 'ok');
    await a.close();
    await b.close();
    const f = client([a.origin, b.origin]);
    const r = await call(f, a.origin, 2000);
    expect(r.ok).toBe(false);
    // Fast: with the network error, not the deadline's TimeoutError.
    expect((r as { error: Error }).error.name).not.toBe('TimeoutError');
    expect(String((r as { error: Error }).error)).toMatch(/fetch failed/);
  });

  it('every replica never answers: the caller deadline rejects, every socket closed', async () => {
    const a = await faulty(() => 'never-answers');
    const b = await faulty(() => 'never-answers');
    const f = client([a.origin, b.origin]);
    // The hedge (after 50 ms) reaches the other replica long before the 2 s deadline.
    const pending = call(f, a.origin, 2000);
    await waitFor(() => a.requests() + b.requests() === 2, {
      message: () => `primary and hedge at the replicas, saw ${a.requests() + b.requests()}`,
    });
    const r = await pending;
    expect(r.ok).toBe(false);
    expect((r as { error: Error }).error.name).toBe('TimeoutError');
    expect(a.requests() + b.requests()).toBe(2);
    await waitFor(() => a.openSockets() + b.openSockets() === 0, {
      message: 'every socket was closed',
    });
  });

  it('a replica name that does not resolve: the other replica answers', async () => {
    const good = await healthy();
    const f = client(['http://replica.invalid:8080', good.origin]);
    const r = await call(f, 'http://replica.invalid:8080', 5000);
    expect(r.ok && r.text).toBe('healthy');
  });

  it('one replica flapping (every other request reset): every call answers', async () => {
    const flappy = await faulty((n) => (n % 2 === 0 ? 'reset-before-headers' : 'ok'));
    const good = await healthy();
    const f = client([flappy.origin, good.origin]);
    for (let i = 0; i < 10; i++) {
      const r = await call(f, flappy.origin, 2000);
      expect(r.ok).toBe(true);
    }
    await waitFor(() => good.inFlight() === 0, { message: 'nothing left running' });
  });
});
