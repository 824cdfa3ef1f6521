/**
 * tailcut over undici 8 (Node ≥ 22.19), which has no legacy handler API and no bridge: hedge()
 * composed onto an undici 8 Agent, for undici 8's request and fetch; and createHedgedFetch (whose
 * fetch is tailcut's own undici 7) over an undici 8 dispatcher, whose legacy handler tailcut
 * adapts. The replicas hold the primary's answer, so a hedge must fire and win whatever the
 * machine's speed, and the loser must be aborted.
 */
import { createHedgedFetch, hedge } from 'tailcut';
import { afterEach, describe, expect, it } from 'vitest';
import { type Replica, startReplica } from '../packages/tailcut/test/support/replica.js';
import { waitFor } from '../packages/tailcut/test/support/wait.js';

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const hasUndici8 = major > 22 || (major === 22 && minor >= 19);
if (!hasUndici8) {
  console.warn(`undici 8 tests skipped: Node ${process.versions.node} (they need ≥ 22.19)`);
}

type Undici8 = typeof import('undici8');
const undici8 = (): Promise<Undici8> => import('undici8');

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** Two replicas; the first holds its first answer until the client gives up on it. */
async function pair(): Promise<[Replica, Replica]> {
  const slow = await startReplica('slow', (n) => (n === 0 ? { hold: true } : {}));
  const fast = await startReplica('fast');
  open.push(slow, fast);
  return [slow, fast];
}

const route = (replicas: Replica[]) => ({
  name: 'r',
  replicas: replicas.map((r) => r.origin),
  hedge: { initialDelayMs: 20 },
});

describe.skipIf(!hasUndici8)('undici 8', () => {
  it('hedge() on an undici 8 Agent: request hedges, the hedge wins, the loser is aborted', async () => {
    const { Agent, request } = await undici8();
    const [slow, fast] = await pair();
    const interceptor = hedge({ routes: [route([slow, fast])] });
    const agent = new Agent().compose(interceptor);
    open.push(agent);
    const res = await request(`${slow.origin}/x`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok from fast');
    expect(interceptor.stats().routes.r?.hedgesWon).toBe(1);
    await waitFor(() => slow.seen[0]?.abortedAt !== undefined, {
      message: 'the held primary was aborted by the client',
    });
  });

  it('hedge() on an undici 8 Agent: undici 8 fetch hedges too', async () => {
    const { Agent, fetch } = await undici8();
    const [slow, fast] = await pair();
    const agent = new Agent().compose(hedge({ routes: [route([slow, fast])] }));
    open.push(agent);
    const res = await fetch(`${slow.origin}/y`, { dispatcher: agent });
    expect(await res.text()).toBe('ok from fast');
  });

  it('createHedgedFetch over an undici 8 dispatcher: hedges, streams, passes through', async () => {
    const { Agent } = await undici8();
    const [slow, fast] = await pair();
    const dispatcher = new Agent();
    open.push(dispatcher);
    const hedgedFetch = createHedgedFetch({
      routes: [{ ...route([slow, fast]), match: { path: '/hedged/*' } }],
      dispatcher,
    });
    open.push(hedgedFetch);
    const res = await hedgedFetch(`${slow.origin}/hedged/1`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('ok from fast');
    expect(hedgedFetch.stats().routes.r?.hedgesWon).toBe(1);
    // A request no route matches goes through the same dispatcher untouched.
    const plain = await hedgedFetch(`${fast.origin}/elsewhere`, { method: 'POST', body: 'hi' });
    expect(await plain.text()).toBe('ok from fast');
    expect(fast.seen.at(-1)?.body.toString()).toBe('hi');
  });
});
