/**
 * Start-up and `close()` keep their `timeoutMs` even when Redis hangs (SIGSTOP: connections stay
 * open, nothing answers) or refuses connections. A Redis of its own: pausing it must not stall
 * other suites.
 */
import { createClient } from 'redis';
import { BUDGET_PORT } from 'tailcut/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REDIS_TESTS,
  startRedis,
  type TestRedis,
} from '../../lab/src/fleet-budget/redis-server.js';
import { waitFor } from '../../tailcut/test/support/wait.js';
import { createFleetBudget } from '../src/index.js';

let redis: TestRedis;
beforeAll(async () => {
  if (REDIS_TESTS) redis = await startRedis();
});
afterAll(async () => {
  redis?.resume();
  await redis?.kill();
});

/** How long `work` takes, ms. */
async function timed(work: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await work();
  return performance.now() - t;
}

/** Slack for a busy 2-core machine; every bound below is far from the time without the fix. */
const SLACK = 1_000;
const quiet = { onModeChange: () => {} };

describe.runIf(REDIS_TESTS)('deadlines while Redis hangs', () => {
  it('close() of a budget with its own connection finishes within timeoutMs', async () => {
    const budget = await createFleetBudget({
      url: redis.url,
      name: 'd-own',
      timeoutMs: 500,
      ...quiet,
    });
    for (let i = 0; i < 50; i++) budget[BUDGET_PORT].deposit();
    await waitFor(() => budget.stats().fleetCalls === 50);
    redis.pause();
    try {
      // Without a deadline node-redis's close() waits for the hung replies as long as Redis hangs.
      expect(await timed(() => budget.close())).toBeLessThan(500 + SLACK);
      expect(budget.stats().mode).toBe('local');
    } finally {
      redis.resume();
    }
  });

  it('start and close() over a client passed in take timeoutMs, not ttlMs, and leave the client usable', async () => {
    const client = createClient({ url: redis.url });
    client.on('error', () => {});
    await client.connect();
    const options = { client, name: 'd-borrowed', timeoutMs: 300, ttlMs: 8_000, ...quiet };
    const before = await createFleetBudget(options);
    before[BUDGET_PORT].deposit();
    await waitFor(() => before.stats().fleetCalls === 1);
    redis.pause();
    try {
      let started: Awaited<ReturnType<typeof createFleetBudget>> | undefined;
      const startMs = await timed(async () => {
        started = await createFleetBudget(options);
      });
      expect(startMs).toBeLessThan(300 + SLACK);
      expect(started?.stats().mode).toBe('local');
      expect(await timed(() => before.close())).toBeLessThan(300 + SLACK);
      expect(await timed(async () => started?.close())).toBeLessThan(300 + SLACK);
    } finally {
      redis.resume();
    }
    expect(await client.ping()).toBe('PONG');
    await client.close();
  });

  it('counts the calls of a sync given up once, when the stalled Redis runs it after all', async () => {
    const client = createClient({ url: redis.url });
    client.on('error', () => {});
    await client.connect();
    // The client passed in is watched: how many sync scripts reach the (stalled) Redis.
    let paused = false;
    let syncsWhilePaused = 0;
    let instance = '';
    const watched = {
      sendCommand(args: readonly string[]) {
        if (paused && args[0]?.startsWith('EVAL') && args.includes(instance)) syncsWhilePaused++;
        return client.sendCommand([...args]);
      },
    };
    const budget = await createFleetBudget({
      client: watched,
      name: 'd-resend',
      ttlMs: 1_000,
      syncMs: 100,
      timeoutMs: 100,
      warmStart: false,
      ...quiet,
    });
    instance = budget.instance; // sync scripts name it; publishes and reads do not
    await waitFor(() => budget.stats().syncs >= 2);
    for (let i = 0; i < 100; i++) budget[BUDGET_PORT].deposit();
    redis.pause();
    paused = true;
    try {
      // Each sync waits a ttl before it is given up and resent: three sent while Redis hangs means
      // the 100 calls went out at least twice, all waiting in Redis's socket.
      await waitFor(() => syncsWhilePaused >= 3, {
        message: () => `${syncsWhilePaused} syncs sent`,
      });
    } finally {
      paused = false;
      redis.resume();
    }
    const synced = budget.stats().syncs;
    await waitFor(() => budget.stats().mode === 'shared' && budget.stats().syncs >= synced + 2);
    // Still within the ttl of the slice Redis counted them in (it ran them after the resume).
    expect(budget.stats().fleetCalls).toBe(100);
    await budget.close();
    await client.close();
  });

  it('starts at once, in local mode, when the connection is refused', async () => {
    let budget: Awaited<ReturnType<typeof createFleetBudget>> | undefined;
    const ms = await timed(async () => {
      budget = await createFleetBudget({
        url: 'redis://127.0.0.1:1',
        name: 'd-refused',
        timeoutMs: 5_000,
        ...quiet,
      });
    });
    // Before: the whole timeoutMs (5 s) for a connection refused at once.
    expect(ms).toBeLessThan(2_500);
    expect(budget?.stats().mode).toBe('local');
    await budget?.close();
  });
});
