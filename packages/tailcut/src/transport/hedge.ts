import { createClient } from '../client.js';
import { invalid } from '../config/checks.js';
import type { HedgedFetchOptions } from '../config/options.js';
import type { HedgeStats } from '../engine/hedger.js';

/** Options of the {@link hedge} interceptor: those of createHedgedFetch, less the dispatcher. */
export type HedgeInterceptorOptions = Omit<HedgedFetchOptions, 'dispatcher'>;

/**
 * An undici interceptor (for `Dispatcher.compose`, undici 7 or 8) that hedges the requests of its
 * routes.
 */
export interface HedgeInterceptor {
  /** Wraps a dispatcher's `dispatch`; `compose` calls it. */
  <D extends (options: never, handler: never) => boolean>(dispatch: D): D;
  /** Per-route delay, window size and counters, and the budget's balance. */
  stats(): HedgeStats;
}

/**
 * Creates an undici interceptor that hedges the requests matching its routes, with the same
 * engine, budget and options as {@link createHedgedFetch}:
 *
 * ```ts
 * const agent = new Agent().compose(hedge({ routes, budget: { ratio: 0.05 } }));
 * await request(url, { dispatcher: agent });
 * setGlobalDispatcher(agent); // undici.fetch and the global dispatcher's users hedge too
 * ```
 *
 * The caller's handler sees exactly one response, the winner's, from its start; its pause,
 * resume and abort reach the winner (abort reaches every attempt). Requests that match no route,
 * and upgrades, pass through untouched. Throws a `TailcutError` (`TAILCUT_INVALID_OPTION`)
 * naming the option and value when the configuration is invalid.
 */
export function hedge(options: HedgeInterceptorOptions): HedgeInterceptor {
  const dispatcher = (options as HedgedFetchOptions).dispatcher;
  if (dispatcher !== undefined) {
    invalid('dispatcher', dispatcher, 'absent: hedge() is composed onto a dispatcher');
  }
  const { hedger, interceptor } = createClient(options);
  return Object.assign(interceptor, { stats: () => hedger.stats() }) as unknown as HedgeInterceptor;
}
