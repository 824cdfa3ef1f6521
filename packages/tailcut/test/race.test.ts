import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { simulation } from './support/sim.js';

const route = { hedge: { initialDelayMs: 10, minSamples: 1_000_000 } };
const ok = (ms: number) => ({ ms, result: 'ok' as const });

describe('race under a virtual clock', () => {
  it('does not hedge when the primary answers before the delay', async () => {
    const sim = simulation(route);
    const p = sim.call(0, () => ok(5));
    await sim.clock.runAll();
    const win = await p;
    expect(win.attempt.kind).toBe('primary');
    expect(sim.attempts).toHaveLength(1);
    expect(sim.clock.pending).toBe(0);
  });

  it('hedges after the delay; the first acceptable answer wins and the loser is aborted then', async () => {
    const sim = simulation({ ...route, replicas: ['http://a:1', 'http://b:1'] });
    const p = sim.call(0, (i) => ok(i === 0 ? 100 : 5));
    await sim.clock.runAll();
    const win = await p;
    expect(win.attempt).toMatchObject({ kind: 'hedge', index: 1, origin: 'http://b:1' });
    const [primary, hedge] = sim.attempts;
    expect(hedge?.startedAt).toBe(10);
    expect(hedge?.committedAt).toBe(15);
    expect(primary?.abortedAt).toBe(15);
    expect(sim.state.counters).toMatchObject({
      calls: 1,
      attempts: 2,
      hedgesSent: 1,
      hedgesWon: 1,
    });
    expect(sim.budget.stats().inFlightHedges).toBe(0);
  });

  it('spaces further hedges one delay apart, up to maxAttempts', async () => {
    const sim = simulation({ hedge: { ...route.hedge, maxAttempts: 4 } });
    const p = sim.call(0, () => ok(1000));
    await sim.clock.runAll();
    await p;
    expect(sim.attempts.map((a) => a.startedAt)).toEqual([0, 10, 20, 30]);
  });

  it('a retryable failure sends the next attempt at once', async () => {
    const sim = simulation({ hedge: { initialDelayMs: 500, minSamples: 1_000_000 } });
    const p = sim.call(0, (i) => (i === 0 ? { ms: 3, result: 'retry' } : ok(4)));
    await sim.clock.runAll();
    const win = await p;
    expect(win.accepted).toBe(true);
    expect(sim.attempts[1]?.startedAt).toBe(3);
  });

  it('an error with no attempt left rejects with that error', async () => {
    const sim = simulation(route);
    const p = sim.call(0, () => ({ ms: 2, result: 'error' }));
    const settled = p.catch((e: unknown) => e);
    await sim.clock.runAll();
    expect(String(await settled)).toContain('attempt 1 failed');
    expect(sim.state.counters.failures).toBe(1);
  });

  it('when every attempt fails, resolves with the last failed result', async () => {
    const sim = simulation(route);
    const p = sim.call(0, (i) => ({ ms: 20 + i, result: 'retry' }));
    await sim.clock.runAll();
    const win = await p;
    expect(win.accepted).toBe(false);
    expect(win.attempt.index).toBe(1);
  });

  it('a `fail` verdict (a hedge 409) waits for the attempts in flight', async () => {
    const sim = simulation(route);
    const p = sim.call(0, (i) => (i === 0 ? ok(50) : { ms: 1, result: 'fail' }));
    await sim.clock.runAll();
    const win = await p;
    expect(win.attempt.index).toBe(0);
    expect(win.accepted).toBe(true);
  });

  for (const when of [0, 5, 15]) {
    it(`caller abort at t=${when} ms rejects with the caller's reason and aborts every attempt`, async () => {
      const sim = simulation(route);
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      const p = sim.call(0, () => ok(100), { signal: controller.signal });
      const settled = p.catch((e: unknown) => e);
      await sim.clock.advance(when);
      controller.abort(reason);
      await sim.clock.runAll();
      expect(await settled).toBe(reason);
      expect(sim.attempts.every((a) => a.abortedAt === when)).toBe(true);
      expect(sim.attempts).toHaveLength(when >= 10 ? 2 : 1);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      expect(sim.clock.pending).toBe(0);
    });
  }

  it('an already-aborted signal starts no attempt', async () => {
    const sim = simulation(route);
    const reason = new Error('already');
    await expect(sim.call(0, () => ok(1), { signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(sim.attempts).toHaveLength(0);
  });

  it('removes its listener from a long-lived caller signal when each call settles', async () => {
    const sim = simulation(route);
    const shared = new AbortController();
    for (let i = 0; i < 50; i++) {
      const p = sim.call(i, () => ok(i % 20), { signal: shared.signal });
      await sim.clock.runAll();
      await p;
    }
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  });

  it('a hedge refused by the budget is skipped and counted, never queued; it is asked again later', async () => {
    const sim = simulation(route, { ratio: 0, minPerSecond: 0 });
    const p = sim.call(0, () => ok(100));
    await sim.clock.runAll();
    await p;
    expect(sim.attempts).toHaveLength(1);
    // Asked at 10 ms, then again after twice the wait each time: 30, 70 (the next, 150, is past
    // the primary's answer at 100).
    expect(sim.state.counters.hedgesDeniedBudget).toBe(3);
    expect(sim.clock.pending).toBe(0);
  });

  it('a refused hedge is sent when it is asked again and the budget has a token by then', async () => {
    const sim = simulation(route, { ratio: 0.5, minPerSecond: 0 });
    const slow = sim.call(0, () => ok(100)); // deposits half a token: its hedge at 10 ms is refused
    await sim.clock.advance(20);
    const other = sim.call(1, () => ok(5)); // the second half
    await sim.clock.runAll();
    await Promise.all([slow, other]);
    const hedge = sim.attempts.find((a) => a.call === 0 && a.ctx.kind === 'hedge');
    expect(hedge?.startedAt).toBe(30);
    expect(sim.state.counters.hedgesDeniedBudget).toBe(1);
  });

  it('a hedge over the concurrency cap is skipped and counted', async () => {
    const sim = simulation(route, { ratio: 1, maxConcurrentHedges: 1 });
    const calls = [0, 1, 2].map((id) => sim.call(id, () => ok(100)));
    await sim.clock.runAll();
    await Promise.all(calls);
    expect(sim.state.counters.hedgesSent).toBe(1);
    // The two others are refused at 10, 30 and 70 ms while the one hedge is in flight.
    expect(sim.state.counters.hedgesDeniedConcurrency).toBe(6);
  });

  it('with every replica tried, a further hedge is skipped as no_replica', async () => {
    const sim = simulation({
      replicas: ['http://a:1', 'http://b:1'],
      hedge: { ...route.hedge, maxAttempts: 3 },
    });
    const p = sim.call(0, () => ok(100));
    await sim.clock.runAll();
    await p;
    expect(sim.attempts).toHaveLength(2);
    expect(sim.state.counters.hedgesNoReplica).toBe(1);
  });

  it('maxAttempts 1 (request not replayable) never hedges', async () => {
    const sim = simulation(route);
    const p = sim.call(0, () => ({ ms: 5, result: 'retry' }), { maxAttempts: 1 });
    await sim.clock.runAll();
    expect((await p).accepted).toBe(false);
    expect(sim.attempts).toHaveLength(1);
  });
});
