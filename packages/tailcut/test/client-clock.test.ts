import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import { createHedgedFetch } from '../src/index.js';
import { type Replica, startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

describe('one clock per client', () => {
  const replicas: Replica[] = [];
  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.close()));
  });

  it('hedges over real sockets exactly when the client’s virtual clock passes the delay', async () => {
    const slow = await startReplica('slow', () => ({ hold: true }));
    const fast = await startReplica('fast');
    replicas.push(slow, fast);
    const clock = new VirtualClock();
    const hedgedFetch = createHedgedFetch({
      routes: [{ name: 'r', replicas: [slow.origin, fast.origin], hedge: { initialDelayMs: 250 } }],
      budget: { ratio: 1, minPerSecond: 0 }, // tokens come from calls: the budget runs on the same clock
      clock,
    });
    const pending = hedgedFetch(`${slow.origin}/x`);
    await waitFor(() => slow.seen.length === 1, { message: 'the primary reached its replica' });
    // Real time passes, virtual time does not: no hedge.
    await clock.advance(249);
    expect(fast.seen.length).toBe(0);
    await clock.advance(1);
    const res = await pending;
    expect(await res.text()).toBe('ok from fast');
    const stats = hedgedFetch.stats();
    expect(stats.routes.r).toMatchObject({ calls: 1, hedgesSent: 1, hedgesWon: 1 });
    // The call's duration is read on the client's clock too: exactly the virtual 250 ms.
    expect(stats.routes.r?.latency.max).toBeCloseTo(250, 0);
    await waitFor(() => slow.inFlight() === 0, { message: 'the loser was cancelled' });
    await hedgedFetch.close();
  });
});
