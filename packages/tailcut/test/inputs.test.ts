import { afterEach, describe, expect, it } from 'vitest';
import { adapters, type Client } from './support/adapters.js';
import { type Replica, startReplica } from './support/replica.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function setup(adapter: (typeof adapters)[number]): Promise<[Replica, Replica, Client]> {
  const a = await startReplica('a', (n) => (n === 0 ? { delayMs: 200 } : {}));
  const b = await startReplica('b');
  const c = adapter.create({
    routes: [
      {
        name: 'r',
        replicas: [a.origin, b.origin],
        idempotent: true,
        hedge: { initialDelayMs: 20, minSamples: 1e6 },
      },
    ],
  });
  open.push(a, b, c);
  return [a, b, c];
}

const stream = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of parts) controller.enqueue(new TextEncoder().encode(p));
      controller.close();
    },
  });

describe.each(adapters)('request bodies that cannot be sent whole ($name)', (adapter) => {
  it('a locked stream is refused before anything is sent', async () => {
    const [a, b, c] = await setup(adapter);
    const body = stream('x');
    body.getReader(); // locks it
    const err = await c
      .fetch(`${a.origin}/v1`, { method: 'POST', body, duplex: 'half' } as RequestInit)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String((err as Error).message)).toMatch(/locked|disturbed|already read/i);
    if (adapter.fetchOnly) expect((err as { code?: string }).code).toBe('TAILCUT_INVALID_REQUEST');
    expect(a.seen.length + b.seen.length).toBe(0);
  });

  it('a stream already read from is refused, nothing is sent', async () => {
    const [a, b, c] = await setup(adapter);
    const body = stream('first', 'second');
    const reader = body.getReader();
    await reader.read();
    reader.releaseLock();
    const err = await c
      .fetch(`${a.origin}/v1`, { method: 'POST', body, duplex: 'half' } as RequestInit)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(a.seen.length + b.seen.length).toBe(0);
  });

  it('concurrent calls never mix: each attempt carries its own call’s headers and body', async () => {
    const [a, b, c] = await setup(adapter);
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        c
          .fetch(`${a.origin}/v1/${i}`, {
            method: 'PUT',
            headers: { 'x-call': String(i), authorization: `Bearer token-${i}` },
            body: `body-${i}`,
          })
          .then((r) => r.text()),
      ),
    );
    for (const seen of [...a.seen, ...b.seen]) {
      const i = seen.url.split('/').pop();
      expect(seen.headers['x-call']).toBe(i);
      expect(seen.headers.authorization).toBe(`Bearer token-${i}`);
      expect(seen.body.toString()).toBe(`body-${i}`);
    }
  });
});

describe('Request objects', () => {
  it('a Request whose body was already read is refused with TAILCUT_INVALID_REQUEST', async () => {
    const [a, b, c] = await setup(adapters[0] as (typeof adapters)[number]);
    const req = new Request(`${a.origin}/v1`, { method: 'POST', body: 'x' });
    await req.text();
    await expect(c.fetch(req)).rejects.toMatchObject({ code: 'TAILCUT_INVALID_REQUEST' });
    expect(a.seen.length + b.seen.length).toBe(0);
  });
});
