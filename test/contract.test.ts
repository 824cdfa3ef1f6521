/**
 * The public API contract of docs/design.md, exercised through the built package exactly as code
 * outside this repo imports it.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBudget, createHedgedFetch, isTailcutError, TailcutError } from 'tailcut';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../packages/tailcut/test/support/wait.js';

interface Hit {
  replica: string;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const hits: Hit[] = [];
const servers: ReturnType<typeof createServer>[] = [];
const origins: string[] = [];
/**
 * The slow replica's answers, held until the test releases them (or the client gives up on
 * them): a hedge answers first however slow the machine, and a call that cannot hedge waits.
 */
const heldSlow = new Set<() => void>();
const releaseSlow = () => {
  const now = [...heldSlow];
  heldSlow.clear();
  for (const answer of now) answer();
};

beforeAll(async () => {
  for (const name of ['slow', 'fast'] as const) {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        hits.push({
          replica: name,
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body,
        });
        const answer = () => res.end(JSON.stringify({ replica: name, echo: body }));
        if (name === 'slow') {
          heldSlow.add(answer);
          res.on('close', () => heldSlow.delete(answer));
          return;
        }
        const t = setTimeout(answer, 5);
        res.on('close', () => clearTimeout(t));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    origins.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('public API contract (docs/design.md)', () => {
  it('hedges an idempotent POST to the other replica, origin rewritten, path and query kept', async () => {
    const [slow, fast] = origins as [string, string];
    const hedgedFetch = createHedgedFetch({
      routes: [
        {
          name: 'chat',
          match: { method: 'POST', path: '/v1/chat/completions' },
          replicas: [slow, fast],
          idempotent: true,
          hedge: {
            percentile: 95,
            maxAttempts: 2,
            initialDelayMs: 30,
            minDelayMs: 1,
            maxDelayMs: 30_000,
            windowMs: 30_000,
            minSamples: 20,
          },
          commitOn: 'headers',
        },
      ],
      budget: { ratio: 0.05, minPerSecond: 10 },
    });
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const res = await hedgedFetch(`${slow}/v1/chat/completions?stream=false`, {
      method: 'POST',
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ replica: 'fast', echo: body });
    const attempts = hits.filter((h) => h.url === '/v1/chat/completions?stream=false');
    expect(attempts.map((h) => h.replica).sort()).toEqual(['fast', 'slow']);
    expect(new Set(attempts.map((h) => h.headers['idempotency-key'])).size).toBe(1);
    expect(attempts.every((h) => h.body === body)).toBe(true);
    expect(hedgedFetch.stats()).toMatchObject({ routes: { chat: { calls: 1, hedgesWon: 1 } } });
    await hedgedFetch.close();
  });

  it('a budget from createBudget() is shared by two clients', async () => {
    const budget = createBudget({ ratio: 0, minPerSecond: 0.1, ttlMs: 10_000 });
    const route = { name: 'r', replicas: origins, hedge: { initialDelayMs: 20, minSamples: 1e6 } };
    const one = createHedgedFetch({ routes: [route], budget });
    const two = createHedgedFetch({ routes: [route], budget });
    // One's primary is held: its hedge, granted the budget's one token, answers.
    const first = one(`${origins[0]}/shared-1`).then((r) => r.text());
    first.catch(() => {}); // awaited below
    await waitFor(() => (one.stats().routes.r?.hedgesSent ?? 0) === 1, {
      message: () => `the first client's hedge was sent: ${JSON.stringify(one.stats())}`,
    });
    await first;
    // Two's primary is held until its hedge has been refused; then it answers.
    let done = false;
    const second = two(`${origins[0]}/shared-2`)
      .then((r) => r.text())
      .finally(() => {
        done = true;
      });
    await waitFor(() => (two.stats().routes.r?.hedgesDeniedBudget ?? 0) >= 1, {
      message: () => `the second client's hedge was refused: ${JSON.stringify(two.stats())}`,
    });
    // The primary may reach the server after the refusal: release until the call is done.
    await waitFor(
      () => {
        releaseSlow();
        return done;
      },
      { message: 'the second call answered once released' },
    );
    await second;
    expect(budget.stats().granted).toBe(1);
    expect(one.stats().routes.r?.hedgesSent).toBe(1);
    // Refused at its first ask, and at each later one (twice the wait each time).
    expect(two.stats().routes.r?.hedgesDeniedBudget).toBeGreaterThanOrEqual(1);
    expect(two.stats().routes.r?.hedgesSent).toBe(0);
    await Promise.all([one.close(), two.close()]);
  });

  it('bad configuration throws a TailcutError with a code, naming option and value', () => {
    try {
      createHedgedFetch({ routes: [{ name: 'x', hedge: { percentile: 120 } }] });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(TailcutError);
      expect(isTailcutError(err, 'TAILCUT_INVALID_OPTION')).toBe(true);
      expect((err as Error).message).toContain('routes[0].hedge.percentile');
      expect((err as Error).message).toContain('120');
    }
  });
});
