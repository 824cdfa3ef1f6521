/**
 * Overload: load-dependent replicas (FIFO queues that keep serving abandoned work) pushed past
 * saturation, then back to normal load. With tailcut's budget the extra load stays within
 * ratio + floor and the fleet recovers; unbudgeted fixed-delay hedging, in the same run, turns
 * the backlog into hedges, nearly doubling the work just when the fleet has none to spare.
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
    const during = await openLoop(strategy, {
      rate: OVERLOAD,
      seconds: 2,
      warmupSeconds: 0.5,
      seed: 1,
    });
    const overloaded = await fleet.stats();
    await fleet.reset();
    const after = await openLoop(strategy, { rate: NORMAL, seconds: 3, warmupSeconds: 1, seed: 2 });
    const counts = await fleet.stats();
    // The fleet counts every attempt of a phase; calls counts the measured part (× 5/4, × 4/3).
    return {
      extraLoadDuring: overloaded.started / (during.calls * (2.5 / 2)) - 1,
      p50After: after.latency.getValueAtPercentile(50) / 1000,
      extraLoadAfter: counts.started / (after.calls * (4 / 3)) - 1,
    };
  } finally {
    await strategy.close();
    await fleet.stop();
  }
}

describe('overload and recovery (lab fleet, loopback)', () => {
  it('tailcut stays within its budget and recovers; unbudgeted hedging multiplies the load', async () => {
    const ours = await phases((origins) => tailcut({ origins, fixedDelayMs: 15 }));
    const unbudgeted = await phases((origins) => fixedDelay({ origins, fixedDelayMs: 15 }));
    const fmt = (r: typeof ours) =>
      `extra load ${(r.extraLoadDuring * 100).toFixed(1)}% during, then p50 ${r.p50After.toFixed(1)} ms and ${(r.extraLoadAfter * 100).toFixed(1)}% after`;
    console.log(`tailcut: ${fmt(ours)}; unbudgeted fixed-delay: ${fmt(unbudgeted)}`);
    // Budget: 5% of calls + 10/s, with slack for the counting windows, under overload and after.
    expect(ours.extraLoadDuring).toBeLessThan(0.05 + 10 / OVERLOAD + 0.05);
    expect(ours.extraLoadAfter).toBeLessThan(0.05 + 10 / NORMAL + 0.03);
    // Recovered: back near the unloaded latency (tens of ms), not seconds.
    expect(ours.p50After).toBeLessThan(60);
    // The unbudgeted hedger turns the queueing into hedges: most calls send two attempts. (Whether
    // it then recovers at normal load is bistable, which is the danger; it is printed, not asserted.)
    expect(unbudgeted.extraLoadDuring).toBeGreaterThan(0.5);
  }, 60_000);
});
