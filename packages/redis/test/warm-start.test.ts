/** Warm start against what a real fleet can leave in Redis: foreign or corrupt snapshots, thousands of keys. */
import * as hdr from 'hdr-histogram-js';
import { createClient } from 'redis';
import { createHedgedFetch } from 'tailcut';
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
let client: ReturnType<typeof createClient>;
beforeAll(async () => {
  if (!REDIS_TESTS) return;
  redis = await startRedis();
  client = createClient({ url: redis.url });
  await client.connect();
});
afterAll(async () => {
  await client?.close();
  await redis?.kill();
});

/** A published value: the route, a newline, a compressed histogram of `us` (µs) recorded `count` times. */
function snapshot(route: string, us: number, count = 1): string {
  const h = hdr.build({ bitBucketSize: 64, highestTrackableValue: 10 * us });
  h.recordValueWithCount(us, count);
  const value = `${route}\n${hdr.encodeIntoCompressedBase64(h)}`;
  h.destroy();
  return value;
}

/** Lists `keys` in the budget's histogram index with `values`, `ageMs` old. */
async function list(name: string, entries: [string, string | undefined][], ageMs: number) {
  const score = Date.now() - ageMs;
  for (let i = 0; i < entries.length; i += 1_000) {
    const chunk = entries.slice(i, i + 1_000);
    const values = chunk.filter((e): e is [string, string] => e[1] !== undefined);
    if (values.length > 0) await client.mSet(values);
    await client.zAdd(
      `tailcut:{${name}}:hx`,
      chunk.map(([key]) => ({ score, value: key })),
    );
  }
}

const routes = [{ name: 'chat', match: { path: '/chat' }, hedge: { initialDelayMs: 500 } }];

async function warmDelay(name: string) {
  const budget = await createFleetBudget({ url: redis.url, name, warmStart: true });
  const fetch = createHedgedFetch({ routes, budget });
  const delay = fetch.stats().routes.chat?.delayMs;
  const stats = budget.stats();
  await fetch.close();
  await budget.close();
  return { delay, stats };
}

describe.runIf(REDIS_TESTS)('warm start from a messy fleet', () => {
  it('skips a snapshot with a latency over an hour, and only that one', async () => {
    const base = 'tailcut:{w-range}';
    await list(
      'w-range',
      [
        [`${base}:h:good:0`, snapshot('chat', 40_000, 100)],
        [`${base}:h:evil:0`, snapshot('chat', 5_000_000_000)], // 83 minutes
        [`${base}:h:evil:1`, snapshot('other', 7_200_000_000)],
      ],
      0,
    );
    const { delay, stats } = await warmDelay('w-range');
    expect(stats.warmRoutes).toBe(1);
    expect(delay).toBeGreaterThan(38);
    expect(delay).toBeLessThan(42);
  });

  it('reads a fleet with thousands of histogram keys (MGET in chunks, the newest 2,000)', async () => {
    const base = 'tailcut:{w-many}';
    // 8,000 stale entries (keys gone), older than the newest 2,000, which hold 30 ms snapshots.
    const stale = Array.from({ length: 8_000 }, (_, i): [string, undefined] => [
      `${base}:h:old${i}:0`,
      undefined,
    ]);
    await list('w-many', stale, 2_000);
    const value = snapshot('chat', 30_000, 10);
    const fresh = Array.from({ length: 1_800 }, (_, i): [string, string] => [
      `${base}:h:new${i}:0`,
      value,
    ]);
    await list('w-many', fresh, 1_000);
    const { delay, stats } = await warmDelay('w-many');
    expect(stats.warmStartError).toBeUndefined();
    expect(stats.warmRoutes).toBe(1);
    expect(delay).toBeGreaterThan(28);
    expect(delay).toBeLessThan(32);
  });

  it('says why the histograms could not be read instead of starting cold silently', async () => {
    await client.set('tailcut:{w-wrong}:hx', 'not a sorted set');
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const budget = await createFleetBudget({ url: redis.url, name: 'w-wrong' });
      expect(budget.stats().mode).toBe('shared');
      expect(budget.stats().warmStartError).toMatch(/WRONGTYPE/);
      budget[BUDGET_PORT].deposit();
      await budget.close();
      await waitFor(() => warnings.length > 0); // warnings are emitted on the next tick
      expect(
        warnings.filter((w) => (w as { code?: string }).code === 'TAILCUT_FLEET_WARM_START'),
      ).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
