/**
 * Overload: load-dependent replicas (FIFO queues that keep serving abandoned work) pushed past
 * saturation, then back to normal load. With tailcut's budget the extra load stays within
 * ratio + floor and the fleet recovers; unbudgeted fixed-delay hedging, in the same run, turns
 * the backlog into more hedges and does not (a metastable failure).
 */
import { fixedDelay, openLoop, type Strategy, startFleet, tailcut } from '@tailcut/lab';
import { describe, expect, it } from 'vitest';

const profile = { medianMs: 10, sigma: 0.4, concurrency: 4, ignoreAborts: true };
// 3 replicas × 4 slots / 10.8 ms mean service ≈ 1,100 calls/s of capacity.
const OVERLOAD = 1_300;
const NORMAL = 700;

async function phases(make: (origins: string[]) => Strategy) {
  const fleet = await startFleet(3, profile, 5);
  const strategy = make(fleet.origins);
  try {
    await openLoop(strategy, { rate: OVERLOAD, seconds: 2, warmupSeconds: 0.5, seed: 1 });
    await fleet.reset();
    const after = await openLoop(strategy, { rate: NORMAL, seconds: 3, warmupSeconds: 1, seed: 2 });
    const counts = await fleet.stats();
    return {
      p50: after.latency.getValueAtPercentile(50) / 1000,
      extraLoad: counts.started / (after.calls * (4 / 3)) - 1,
      stats: strategy.stats?.(),
    };
  } finally {
    await strategy.close();
    await fleet.stop();
  }
}

describe('overload and recovery (lab fleet, loopback)', () => {
  it('tailcut recovers within its budget; unbudgeted hedging stays collapsed', async () => {
    const ours = await phases((origins) => tailcut({ origins, fixedDelayMs: 15 }));
    const unbudgeted = await phases((origins) => fixedDelay({ origins, fixedDelayMs: 15 }));
    // Recovered: back near the unloaded latency (tens of ms), not seconds.
    expect(ours.p50).toBeLessThan(60);
    // Budget: 5% of calls + 10/s over the phase, with some slack for the fleet's count window.
    expect(ours.extraLoad).toBeLessThan(0.05 + 10 / NORMAL + 0.03);
    // The unbudgeted hedger hedges nearly every call and stays far slower.
    expect(unbudgeted.extraLoad).toBeGreaterThan(0.5);
    expect(unbudgeted.p50).toBeGreaterThan(ours.p50 * 5);
    console.log(
      `after overload: tailcut p50 ${ours.p50.toFixed(1)} ms, extra load ${(ours.extraLoad * 100).toFixed(1)}%; unbudgeted p50 ${unbudgeted.p50.toFixed(1)} ms, extra load ${(unbudgeted.extraLoad * 100).toFixed(1)}%`,
    );
  }, 60_000);
});
