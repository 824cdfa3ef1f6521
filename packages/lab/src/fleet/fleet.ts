import { type Child, startChild } from '../bench/child.js';
import type { Profile } from './profile.js';

/** What the fleet counted since it started or was last reset. */
export interface FleetStats {
  started: number;
  finished: number;
  aborted: number;
  overloaded: number;
  /** Replica time spent on attempts that were then aborted, ms. */
  abortedWorkMs: number;
  /** For each aborted loser: ms between its call's first answer and the abort's arrival. */
  abortLagMs: number[];
  perReplica: number[];
}

/** A fleet of replica servers on 127.0.0.1, in a child process. */
export interface Fleet {
  origins: string[];
  stats(): Promise<FleetStats>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `replicas` replicas drawing from `profile`, seeded. */
export async function startFleet(replicas: number, profile: Profile, seed = 1): Promise<Fleet> {
  const child: Child = await startChild('../fleet/replica-server.js', [
    JSON.stringify({ replicas, profile, seed }),
  ]);
  return {
    origins: child.hello.origins as string[],
    stats: async () => (await child.ask({ stats: true }, (m) => 'stats' in m)).stats as FleetStats,
    reset: async () => {
      await child.ask({ reset: true }, (m) => m.reset === true);
    },
    stop: () => child.stop(),
  };
}
