/**
 * Credentials go only where the configuration sends them: a call's headers reach the replicas of
 * the route it matched and no other; pass-through calls are untouched.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHedgedFetch } from 'tailcut';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const seen = new Map<string, IncomingHttpHeaders[]>();
const servers: Server[] = [];
const origins: Record<string, string> = {};

beforeAll(async () => {
  for (const name of ['r1', 'r2', 'r3', 'other']) {
    seen.set(name, []);
    const server = createServer((req, res) => {
      seen.get(name)?.push(req.headers);
      // r1 never answers (until the client gives up on the request), so every call routed to
      // it is hedged to r2, however slow the machine.
      if (name === 'r1') return;
      const t = setTimeout(() => res.end(name), 1);
      res.on('close', () => clearTimeout(t));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    origins[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('credentials and isolation', () => {
  it('a route’s calls (and hedges) reach only that route’s replicas; pass-through is untouched', async () => {
    const f = createHedgedFetch({
      routes: [
        {
          name: 'chat',
          match: { path: '/v1/chat' },
          replicas: [origins.r1 as string, origins.r2 as string],
          idempotent: true,
          hedge: { initialDelayMs: 20, minSamples: 1e6 },
        },
        { name: 'embed', match: { path: '/v1/embed' }, replicas: [origins.r3 as string] },
      ],
    });
    const secret = 'Bearer sk-chat-only';
    for (let i = 0; i < 4; i++) {
      await (
        await f(`${origins.r1}/v1/chat`, {
          method: 'POST',
          body: '{}',
          headers: { authorization: secret },
        })
      ).text();
    }
    await (await f(`${origins.r3}/v1/embed`, { headers: { 'x-api-key': 'embed-key' } })).text();
    await (await f(`${origins.other}/health`, { headers: { 'x-custom': 'as-is' } })).text();
    await f.close();

    const auth = (name: string) => (seen.get(name) ?? []).map((h) => h.authorization);
    expect(auth('r1').length + auth('r2').length).toBeGreaterThan(4); // hedges went to r2
    expect([...auth('r1'), ...auth('r2')].every((a) => a === secret)).toBe(true);
    expect(auth('r3').filter(Boolean)).toHaveLength(0);
    expect(auth('other').filter(Boolean)).toHaveLength(0);
    expect(
      (seen.get('r1') ?? [])
        .concat(seen.get('r2') ?? [])
        .every((h) => h['x-api-key'] === undefined),
    ).toBe(true);
    const passThrough = seen.get('other')?.[0];
    expect(passThrough?.['x-custom']).toBe('as-is');
    expect(passThrough?.['idempotency-key']).toBeUndefined();
    expect(passThrough?.traceparent).toBeUndefined();
    for (const h of seen.get('r2') ?? []) expect(h.host).toBe(new URL(origins.r2 as string).host);
  });
});
