import { createFleetBudget, type FleetBudget } from '@tailcut/redis';
import { createBudget } from 'tailcut';
import { BUDGET_PORT, type BudgetPort } from 'tailcut/engine';
import { startRedis } from './redis-server.js';

/** What the fleet budget costs, measured side by side with tailcut's local budget. */
export interface FleetCost {
  /** Hot path (deposit + acquire + release on 5% of calls), ns per call: local budget, fleet budget. */
  hotPathNsLocal: number;
  hotPathNsFleet: number;
  /** Whole-process CPU per call at `rate` calls/s, background syncs included, µs: local, fleet. */
  cpuUsPerCallLocal: number;
  cpuUsPerCallFleet: number;
  rate: number;
  seconds: number;
  /** Process CPU per second per instance syncing in the background with no calls (`instances` at once, less the idle process), µs. */
  backgroundCpuUsPerSecond: number;
  /** Per instance, with `instances` syncing at once: round trips (scripts) and commands per second in Redis. */
  roundTripsPerSecond: number;
  commandsPerSecond: number;
  instances: number;
  syncMs: number;
}

function hotPath(port: BudgetPort, calls: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    port.deposit();
    if (i % 20 === 0 && port.acquire() === 'granted') port.release();
  }
  return Number(process.hrtime.bigint() - start) / calls;
}

/** CPU µs per call over `seconds` at `rate` calls/s (ticks of 10 ms). */
async function cpuPerCall(port: BudgetPort, rate: number, seconds: number): Promise<number> {
  const before = process.cpuUsage();
  const start = performance.now();
  let done = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      const due = Math.min(rate * seconds, Math.floor((elapsed / 1000) * rate));
      for (; done < due; done++) {
        port.deposit();
        if (done % 20 === 0 && port.acquire() === 'granted') port.release();
      }
      if (elapsed >= seconds * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / Math.max(1, done);
}

function stat(info: string, name: string): number {
  const m = new RegExp(`cmdstat_${name.replace('|', '\\|')}:calls=(\\d+)`).exec(info);
  return m ? Number(m[1]) : 0;
}

function totalCalls(info: string): number {
  let n = 0;
  for (const m of info.matchAll(/cmdstat_[a-z|]+:calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

/**
 * Measures the fleet budget's cost: the hot path in a tight loop, the CPU per call at a steady
 * rate with the background syncs running (each against tailcut's local budget in the same
 * process), and the Redis round trips and commands per second per instance, from Redis's own
 * command statistics, with `instances` budgets syncing at once.
 */
export async function measureFleetCost(
  o: { rate?: number; seconds?: number; instances?: number; syncMs?: number } = {},
): Promise<FleetCost> {
  const rate = o.rate ?? 2_000;
  const seconds = o.seconds ?? 5;
  const instances = o.instances ?? 10;
  const syncMs = o.syncMs ?? 200;
  const redis = await startRedis();
  const budgets: FleetBudget[] = [];
  try {
    const options = { url: redis.url, name: 'cost', ratio: 0.05, minPerSecond: 10, syncMs };
    const local = createBudget({ ratio: 0.05, minPerSecond: 10 })[BUDGET_PORT];
    const fleet = await createFleetBudget(options);
    budgets.push(fleet);
    const port = fleet[BUDGET_PORT];
    hotPath(local, 200_000); // warm the JIT for both
    hotPath(port, 200_000);
    const hotPathNsLocal = hotPath(local, 1_000_000);
    const hotPathNsFleet = hotPath(port, 1_000_000);
    const cpuUsPerCallLocal = await cpuPerCall(local, rate, seconds);
    const cpuUsPerCallFleet = await cpuPerCall(port, rate, seconds);
    await fleet.close();
    budgets.length = 0;
    const idle = async () => {
      const before = process.cpuUsage();
      const t = performance.now();
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      const cpu = process.cpuUsage(before);
      return (cpu.user + cpu.system) / ((performance.now() - t) / 1000);
    };
    await new Promise((resolve) => setTimeout(resolve, 500));
    const baseline = await idle();
    for (let i = 0; i < instances; i++) budgets.push(await createFleetBudget(options));
    await redis.command('CONFIG RESETSTAT');
    const t0 = performance.now();
    const withSyncs = await idle();
    const info = await redis.command('INFO commandstats');
    const elapsed = (performance.now() - t0) / 1000;
    const scripts = stat(info, 'evalsha') + stat(info, 'eval');
    return {
      hotPathNsLocal,
      hotPathNsFleet,
      cpuUsPerCallLocal,
      cpuUsPerCallFleet,
      backgroundCpuUsPerSecond: (withSyncs - baseline) / instances,
      rate,
      seconds,
      roundTripsPerSecond: scripts / instances / elapsed,
      commandsPerSecond:
        (totalCalls(info) - stat(info, 'info') - stat(info, 'config|resetstat')) /
        instances /
        elapsed,
      instances,
      syncMs,
    };
  } finally {
    await Promise.all(budgets.map((b) => b.close()));
    await redis.kill();
  }
}
