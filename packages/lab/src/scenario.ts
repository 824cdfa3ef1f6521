import { type Fleet, startFleet } from './fleet/fleet.js';
import type { Profile } from './fleet/profile.js';
import { openLoop } from './load/open-loop.js';
import { type Row, summarize } from './report/summary.js';
import {
  cockatielRetry,
  fixedDelay,
  none,
  type Strategy,
  type StrategyOptions,
  tailcut,
} from './strategies.js';
import { hedgedAt, hedgedAtPercentile, retryAfter, type Theory, unhedged } from './theory.js';

/** The strategies the lab compares, by name. */
export const STRATEGIES = ['none', 'fixed', 'cockatiel', 'tailcut'] as const;
export type StrategyName = (typeof STRATEGIES)[number] | 'unbudgeted' | 'auto';

/** A scenario: a fleet, a load, the strategies to run on it one after another. */
export interface Scenario {
  profile: Profile;
  replicas: number;
  rate: number;
  seconds: number;
  warmupSeconds?: number;
  seed?: number;
  sloMs: number;
  /** Fixed delay of the fixed-delay hedger and timeout of timeout-and-retry, ms. */
  fixedDelayMs: number;
  strategies: readonly StrategyName[];
  /** Called with (strategy, fraction done). */
  progress?: ((strategy: string, fraction: number) => void) | undefined;
  /**
   * A fresh fleet for each strategy: for load-dependent replicas, whose queues would otherwise
   * hand the next strategy the backlog of the previous one.
   */
  fleetPerStrategy?: boolean;
  /** Called each second with the tailcut strategy's stats (delay over time). */
  onSecond?: (strategy: Strategy, second: number) => void;
  /**
   * When the fleet's clock (its shift and cold-start schedule) starts: at the end of the
   * warm-up (default, as the client measures), or with the strategy, so that the warm-up is the
   * fleet's cold start and the measurement what follows it.
   */
  fleetClockFrom?: 'measure' | 'start';
}

function make(name: StrategyName, o: StrategyOptions): Strategy {
  switch (name) {
    case 'none':
      return none(o);
    case 'fixed':
      return fixedDelay(o);
    case 'cockatiel':
      return cockatielRetry(o);
    case 'tailcut':
      return tailcut(o);
    case 'unbudgeted':
      return tailcut({ ...o, unbudgeted: true });
    case 'auto':
      return tailcut({ ...o, percentile: 'auto' });
  }
}

function theoryOf(name: StrategyName, s: Scenario): Theory | undefined {
  // The closed forms hold for identical, independent replicas without queueing or drift.
  const p = s.profile;
  if (
    p.concurrency !== undefined ||
    p.correlatedFromMs !== undefined ||
    p.coldMs !== undefined ||
    p.slowReplica !== undefined
  )
    return undefined;
  if (p.overloadProbability !== undefined) return undefined;
  switch (name) {
    case 'none':
      return unhedged(p);
    case 'fixed':
      return hedgedAt(p, s.fixedDelayMs);
    case 'cockatiel':
      return retryAfter(p, s.fixedDelayMs);
    case 'tailcut':
      return hedgedAtPercentile(p, 95);
    default:
      return undefined;
  }
}

/**
 * Runs every strategy of the scenario on one fleet, same seed, one after the other (the fleet's
 * counters reset between them), and returns a row per strategy.
 */
export async function runScenario(s: Scenario): Promise<Row[]> {
  if (s.fleetPerStrategy) {
    const rows: Row[] = [];
    for (const name of s.strategies) {
      rows.push(...(await runScenario({ ...s, strategies: [name], fleetPerStrategy: false })));
    }
    return rows;
  }
  const fleet: Fleet = await startFleet(s.replicas, s.profile, s.seed ?? 1);
  const rows: Row[] = [];
  try {
    // The load generator's own CPU per call at this rate, subtracted from every strategy's.
    const calibration = await openLoop(
      { name: 'calibration', call: async () => {}, close: async () => {} },
      { rate: s.rate, seconds: 1, warmupSeconds: 0.2 },
    );
    for (const name of s.strategies) {
      await fleet.reset();
      const strategy = make(name, { origins: fleet.origins, fixedDelayMs: s.fixedDelayMs });
      try {
        const load = await openLoop(strategy, {
          rate: s.rate,
          seconds: s.seconds,
          warmupSeconds: s.warmupSeconds ?? 2,
          seed: s.seed ?? 7,
          progress: (f) => s.progress?.(strategy.name, f),
          onSecond: (second) => s.onSecond?.(strategy, second),
          // The fleet counts from the end of the warm-up, as the client measures.
          onMeasureStart: () => {
            if (s.fleetClockFrom !== 'start') void fleet.reset();
          },
        });
        // Let the losers' aborts reach the fleet before counting.
        await new Promise((r) => setTimeout(r, 200));
        const counts = await fleet.stats();
        const net = {
          ...load,
          cpuUsPerCall: Math.max(0, load.cpuUsPerCall - calibration.cpuUsPerCall),
        };
        rows.push(summarize(strategy.name, net, counts, s.sloMs, theoryOf(name, s)));
      } finally {
        await strategy.close();
      }
    }
  } finally {
    await fleet.stop();
  }
  return rows;
}
