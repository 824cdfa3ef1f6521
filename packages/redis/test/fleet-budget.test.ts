import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { Redis as IORedis } from 'ioredis';
import { createClient } from 'redis';
import { createBudget, createHedgedFetch, isTailcutError } from 'tailcut';
import { BUDGET_PORT } from 'tailcut/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REDIS_TESTS,
  startRedis,
  type TestRedis,
} from '../../lab/src/fleet-budget/redis-server.js';
import { waitFor } from '../../tailcut/test/support/wait.js';
import { createFleetBudget, type FleetBudget, type FleetMode } from '../src/index.js';
import { drive, worstExcess } from './support/load.js';

let redis: TestRedis;
beforeAll(async () => {
  if (REDIS_TESTS) redis = await startRedis();
});
afterAll(async () => {
  await redis?.kill();
});

const FLEET = { ratio: 0.05, minPerSecond: 5, ttlMs: 2_000 };
/** The stated tolerance: the fleet's sustained hedges over two sync intervals, and one per instance. */
function tolerance(instances: number, callsPerSecond: number, syncMs: number): number {
  return (FLEET.ratio * callsPerSecond + FLEET.minPerSecond) * ((2 * syncMs) / 1000) + instances;
}

/** Six instances, 20 calls/s each, each wanting to hedge half its calls (the example). */
function sixInstances(ports: Parameters<typeof drive>[0], ms: number) {
  return drive(ports, { callsPerSecond: 20, hedgeShare: 0.5, signal: AbortSignal.timeout(ms) });
}

async function fleetOf(n: number, name: string, extra: object = {}): Promise<FleetBudget[]> {
  const fleet: FleetBudget[] = [];
  for (let i = 0; i < n; i++) {
    fleet.push(await createFleetBudget({ url: redis.url, name, syncMs: 100, ...FLEET, ...extra }));
  }
  return fleet;
}

describe.runIf(REDIS_TESTS)('createFleetBudget', () => {
  it('keeps six instances within one fleet bound, where per-instance budgets exceed it', async () => {
    const fleet = await fleetOf(6, 'six');
    const shared = worstExcess(
      await sixInstances(
        fleet.map((b) => b[BUDGET_PORT]),
        5_000,
      ),
      FLEET,
    );
    const s = fleet[0]?.stats();
    expect(s?.mode).toBe('shared');
    expect(s?.instances).toBe(6);
    expect(s?.fleetCalls).toBeGreaterThan(100);
    await Promise.all(fleet.map((b) => b.close()));
    const separate = worstExcess(
      await sixInstances(
        Array.from({ length: 6 }, () => createBudget(FLEET)[BUDGET_PORT]),
        5_000,
      ),
      FLEET,
    );
    expect(shared.excess).toBeLessThanOrEqual(tolerance(6, 120, 100));
    expect(shared.hedges).toBeGreaterThan(0);
    // Six floors instead of one: well over the fleet's bound, and over what the fleet budget sent.
    expect(separate.excess).toBeGreaterThan(0);
    expect(separate.hedges).toBeGreaterThan(1.5 * shared.hedges);
  });

  it('prefixes every key and gives every key an expiry', async () => {
    const [budget] = await fleetOf(1, 'keys', { prefix: 'myapp' });
    const port = budget?.[BUDGET_PORT];
    for (let i = 0; i < 50; i++) port?.deposit();
    port?.observe?.('chat', 12);
    await waitFor(() => (budget?.stats().fleetCalls ?? 0) >= 50);
    await budget?.close(); // publishes the histogram
    const keys = (await redis.command('KEYS *')).split('\r\n').filter((l) => l && !/^[*$]/.test(l));
    expect(keys.length).toBeGreaterThanOrEqual(3);
    for (const key of keys) {
      if (!key.startsWith('myapp:')) continue;
      expect(key.startsWith('myapp:{keys}:')).toBe(true);
      const ttl = Number((await redis.command(`PTTL ${key}`)).slice(1));
      expect(ttl, key).toBeGreaterThan(0);
    }
  });

  it('falls back to its local share when Redis dies, says so once, and rejoins when it is back', async () => {
    const modes: FleetMode[] = [];
    const fleet = await fleetOf(2, 'outage', { onModeChange: (m: FleetMode) => modes.push(m) });
    const ports = fleet.map((b) => b[BUDGET_PORT]);
    const controller = new AbortController();
    const load = drive(ports, { callsPerSecond: 20, hedgeShare: 0.5, signal: controller.signal });
    await waitFor(() => (fleet[0]?.stats().fleetCalls ?? 0) > 20);
    // Two instances at the same rate: about half the fleet's calls each (syncs are 100 ms apart).
    expect(fleet[0]?.stats().share).toBeGreaterThan(0.25);
    expect(fleet[0]?.stats().share).toBeLessThan(0.75);
    await redis.kill();
    await waitFor(() => fleet.every((b) => b.stats().mode === 'local'), { message: 'local mode' });
    // The hot path neither throws nor waits while Redis is down.
    for (let i = 0; i < 1000; i++) {
      ports[0]?.deposit();
      if (ports[0]?.acquire() === 'granted') ports[0]?.release();
    }
    await waitFor(() => (fleet[0]?.stats().syncFailures ?? 0) >= 5);
    expect(modes).toEqual(['local', 'local']);
    await redis.restart();
    await waitFor(() => fleet.every((b) => b.stats().mode === 'shared'), {
      message: 'shared again',
    });
    expect(modes).toEqual(['local', 'local', 'shared', 'shared']);
    // Redis came back empty: within a ttl the window is the fleet's again.
    await waitFor(() => (fleet[0]?.stats().instances ?? 0) === 2);
    controller.abort();
    const log = await load;
    expect(log.length).toBeGreaterThan(0);
    await Promise.all(fleet.map((b) => b.close()));
  });

  it('goes local when Redis hangs (no answer within timeoutMs), without slowing a call, and back when it answers', async () => {
    const modes: FleetMode[] = [];
    const budget = await createFleetBudget({
      url: redis.url,
      name: 'hang',
      timeoutMs: 300,
      syncMs: 100,
      onModeChange: (m: FleetMode) => modes.push(m),
    });
    const port = budget[BUDGET_PORT];
    redis.pause();
    try {
      await waitFor(() => budget.stats().mode === 'local', { message: 'local mode' });
      // The port is synchronous: these calls cannot wait on the hung Redis, and they still decide.
      let granted = 0;
      for (let i = 0; i < 100; i++) {
        port.deposit();
        if (port.acquire() === 'granted') {
          granted++;
          port.release();
        }
      }
      expect(granted).toBeGreaterThan(0);
    } finally {
      redis.resume();
    }
    await waitFor(() => budget.stats().mode === 'shared', { message: 'shared again' });
    expect(modes).toEqual(['local', 'shared']);
    await budget.close();
  });

  it('starts in local mode, with the whole floor, when Redis never answers', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    const budget = await createFleetBudget({
      url: 'redis://127.0.0.1:1',
      name: 'nobody',
      timeoutMs: 200,
    });
    expect(budget.stats().mode).toBe('local');
    expect(budget.stats().share).toBe(1);
    expect(budget[BUDGET_PORT].acquire()).toBe('granted');
    await waitFor(() => budget.stats().syncFailures >= 3);
    await waitFor(() => warnings.length > 0);
    expect(warnings.filter((w) => w.includes('"nobody"'))).toHaveLength(1);
    process.off('warning', onWarning);
    await budget.close();
    await budget.close();
  });

  it('works over a node-redis or ioredis client the user passes, and leaves it open', async () => {
    const nodeRedis = createClient({ url: redis.url });
    nodeRedis.on('error', () => {});
    await nodeRedis.connect();
    const ioredis = new IORedis(redis.port, '127.0.0.1');
    ioredis.on('error', () => {});
    const a = await createFleetBudget({ client: nodeRedis, name: 'clients', ...FLEET });
    const b = await createFleetBudget({ client: ioredis, name: 'clients', ...FLEET });
    for (let i = 0; i < 10; i++) {
      a[BUDGET_PORT].deposit();
      b[BUDGET_PORT].deposit();
    }
    await waitFor(() => a.stats().fleetCalls === 20 && b.stats().fleetCalls === 20);
    expect(a.stats().instances).toBe(2);
    await Promise.all([a.close(), b.close()]);
    expect(await nodeRedis.ping()).toBe('PONG');
    expect(await ioredis.ping()).toBe('PONG');
    await nodeRedis.close();
    ioredis.disconnect();
  });

  it('reports the fleet through OpenTelemetry gauges', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const budget = await createFleetBudget({
      url: redis.url,
      name: 'otel',
      meterProvider,
      ...FLEET,
    });
    for (let i = 0; i < 30; i++) budget[BUDGET_PORT].deposit();
    await waitFor(() => budget.stats().fleetCalls === 30);
    const { resourceMetrics } = await reader.collect();
    const seen = new Map<string, number>();
    for (const sm of resourceMetrics.scopeMetrics) {
      for (const m of sm.metrics) seen.set(m.descriptor.name, Number(m.dataPoints[0]?.value));
    }
    expect(seen.get('tailcut.fleet.calls')).toBe(30);
    expect(seen.get('tailcut.fleet.mode')).toBe(1);
    expect(seen.get('tailcut.fleet.instances')).toBe(1);
    await budget.close();
    await meterProvider.shutdown();
  });

  it('refuses bad options with an error naming the option and the value', async () => {
    const bad: [object, string][] = [
      [{ name: 'x' }, '`url`'],
      [{ url: 'http://127.0.0.1:6379', name: 'x' }, '"http://127.0.0.1:6379"'],
      [{ url: 'redis://u:secret@h:1', client: {}, name: 'x' }, '`url`'],
      [{ url: redis.url, name: 'a b' }, '`name`'],
      [{ url: redis.url, name: 'x', ratio: 2 }, '`ratio`'],
      [{ url: redis.url, name: 'x', ttlMs: 10.5 }, '`ttlMs`'],
      [{ url: redis.url, name: 'x', syncMs: 1 }, '`syncMs`'],
      [{ url: redis.url, name: 'x', rate: 1 }, '`rate`'],
      [{ client: { get() {} }, name: 'x' }, '`client`'],
      // Passwords holding `/` or `@`, or a URL node-redis itself would refuse with a bare TypeError.
      [{ url: 'redis://user:se/cret@127.0.0.1', name: 'x' }, '"redis://***@127.0.0.1"'],
      [{ url: 'redis://user:sec@ret@127.0.0.1:99999', name: 'x' }, '"redis://***@127.0.0.1:99999"'],
      [{ url: 'redis:secret@127.0.0.1', name: 'x' }, '`url`'],
      [{ url: 'redis://:secret@[::1', name: 'x' }, '`url`'],
      [{ url: 'redis://127.0.0.1/abc', name: 'x' }, '"redis://127.0.0.1/abc"'],
      [{ url: 'redis://127.0.0.1/0?db=1', name: 'x' }, '`url`'],
      [
        { url: redis.url, name: 'x', ttlMs: 1_000, syncMs: 300 },
        '`ttlMs` / 4 (250 with ttlMs 1000), got 300',
      ],
    ];
    for (const [options, named] of bad) {
      const error = await createFleetBudget(options as never).catch((e: unknown) => e);
      expect(isTailcutError(error, 'TAILCUT_INVALID_OPTION'), String(error)).toBe(true);
      expect(String((error as Error).message)).toContain(named);
      expect(String((error as Error).message)).not.toMatch(/secret|cret|ret@/);
    }
    // A well-formed URL with a password and a database number is taken.
    const ok = await createFleetBudget({
      url: `redis://:pw@127.0.0.1:${redis.port}/0`,
      name: 'url-ok',
    });
    await ok.close();
  });

  it('keeps an instance whose ttlMs, ratio or minPerSecond differ out of the fleet budget, says why, and lets it in once the old settings are gone', async () => {
    const reasons: string[] = [];
    const [old] = await fleetOf(1, 'settings');
    const changed = await createFleetBudget({
      url: redis.url,
      name: 'settings',
      syncMs: 100,
      ...FLEET,
      ttlMs: 4_000,
      ratio: 0.1,
      onModeChange: (m: FleetMode, reason: string) => reasons.push(`${m}: ${reason}`),
    });
    // Rolling out a config change: the new instance decides locally, on its part of its floor.
    expect(changed.stats().mode).toBe('local');
    expect(changed.stats().localReason).toContain('ttlMs 4000 here, 2000 in the fleet');
    expect(changed.stats().localReason).toContain('ratio 0.1 here, 0.05 in the fleet');
    expect(reasons).toHaveLength(1);
    for (let i = 0; i < 10; i++) changed[BUDGET_PORT].deposit();
    await waitFor(() => changed.stats().syncFailures >= 3);
    expect(reasons).toHaveLength(1); // told once
    expect(old?.stats().mode).toBe('shared');
    expect(old?.stats().instances).toBe(1);
    expect(old?.stats().fleetCalls).toBe(0);
    // The last instance with the old settings leaves: a ttl later the new settings are the fleet's.
    await old?.close();
    await waitFor(() => changed.stats().mode === 'shared', { message: 'the new settings joined' });
    expect(reasons.at(-1)).toMatch(/^shared/);
    await waitFor(() => changed.stats().fleetCalls === 10); // its calls while outside, resent
    await changed.close();
  });

  it('with ratio 0 allows the floor only, shared by the fleet', async () => {
    const fleet = await fleetOf(2, 'ratio0', { ratio: 0, minPerSecond: 5 });
    const log = await sixInstances(
      fleet.map((b) => b[BUDGET_PORT]),
      3_000,
    );
    const r = worstExcess(log, { ...FLEET, ratio: 0 });
    expect(r.excess).toBeLessThanOrEqual(tolerance(2, 0, 100));
    expect(r.hedges).toBeGreaterThan(0);
    await Promise.all(fleet.map((b) => b.close()));
  });
});

describe.runIf(REDIS_TESTS)('warm start', () => {
  it("seeds a new client's route delay from the fleet's histograms", async () => {
    const old = await createFleetBudget({ url: redis.url, name: 'warm', ...FLEET });
    for (let i = 0; i < 1000; i++) old[BUDGET_PORT].observe?.('chat', 40 + (i % 100) / 10);
    await old.close(); // publishes
    const routes = [{ name: 'chat', match: { path: '/chat' }, hedge: { initialDelayMs: 500 } }];
    const fresh = await createFleetBudget({ url: redis.url, name: 'warm', ...FLEET });
    const warm = createHedgedFetch({ routes, budget: fresh });
    const cold = createHedgedFetch({ routes });
    expect(fresh.stats().warmRoutes).toBe(1);
    const delay = warm.stats().routes.chat?.delayMs ?? 0;
    expect(delay).toBeGreaterThan(45);
    expect(delay).toBeLessThan(52);
    expect(cold.stats().routes.chat?.delayMs).toBe(500);
    await Promise.all([warm.close(), cold.close(), fresh.close()]);
  });
});

describe.skipIf(REDIS_TESTS)('without redis-server', () => {
  it.skip('needs redis-server (apt-get install redis-server); .ci/run installs it', () => {});
});
