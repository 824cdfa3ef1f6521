/**
 * Instances of a service as child processes (the lab's fleet-budget runner): a budget each, then
 * one fleet budget in a real redis-server that is killed mid-run and restarted empty.
 */
import { REDIS_TESTS, runFleetBudget } from '@tailcut/lab';
import { describe, expect, it } from 'vitest';

const o = { ratio: 0.05, minPerSecond: 5, ttlMs: 2_000, syncMs: 100 };
/** The stated tolerance: the fleet's sustained hedges over two sync intervals, and one per instance. */
const tolerance = (instances: number, callsPerSecond: number) =>
  (o.ratio * callsPerSecond + o.minPerSecond) * ((2 * o.syncMs) / 1000) + instances;

describe.runIf(REDIS_TESTS)('fleet budget across processes', () => {
  it('holds N processes to one bound where per-instance budgets do not, through a Redis kill and restart', async () => {
    // Six instances (the lab's default): per-instance budgets then allow six floors against the
    // fleet's one, a margin that holds on a busy machine, where instances hedge less of their
    // budget (with four, 58 and 70 hedges against a bound of 72 were seen under heavy load).
    const instances = 6;
    const rate = 20;
    const report = await runFleetBudget({
      ...o,
      instances,
      rate,
      seconds: 8,
      killAt: 2,
      restartAt: 3.5,
      warmStart: false,
    });
    const [local, fleet] = report.runs;
    if (local === undefined || fleet === undefined) throw new Error('two runs expected');
    // Per-instance budgets: N floors, well over the fleet's bound.
    expect(local.hedges).toBeGreaterThan(local.runBound);
    expect(local.hedges).toBeGreaterThan(1.5 * fleet.hedges);
    // The fleet budget: within the bound over the run; windows touching the outage may spend one
    // more floor (each instance its share while local, and Redis restarted empty); a ttl after the
    // restart, within the bound again.
    expect(fleet.hedges).toBeLessThanOrEqual(fleet.runBound);
    expect(fleet.worstExcess).toBeLessThanOrEqual(
      (o.minPerSecond * o.ttlMs) / 1000 + tolerance(instances, instances * rate),
    );
    expect(fleet.worstExcessAfterRecovery).toBeDefined();
    expect(fleet.worstExcessAfterRecovery).toBeLessThanOrEqual(
      tolerance(instances, instances * rate),
    );
    // No call failed, and every instance went local and came back.
    expect(local.errors + fleet.errors).toBe(0);
    for (const modes of fleet.modes) {
      expect(modes.map(([, m]) => m)).toEqual(['shared', 'local', 'shared']);
    }
  }, 120_000);
});
