import type { BudgetStats, HedgeBudget } from '../budget/budget.js';
import type { Clock } from '../clock.js';
import type { ClientSettings } from '../config/validate.js';
import type { RequestTarget } from '../routes/matcher.js';
import type { TailStats } from '../telemetry/tail.js';
import { type RouteCounters, RouteState } from './route-state.js';

/** A route's figures, as `stats()` reports them. */
export interface RouteStats extends RouteCounters {
  /** The hedge delay a call starting now would use, ms. */
  delayMs: number;
  /** Latencies in the route's rolling window. */
  samples: number;
  /** The route's recent calls, end to end: percentiles, max, CV, p99/p50, slow rate (ms). */
  latency: TailStats;
  /** Conditioning keys with a delay estimator of their own (routes with a `key`). */
  keys: number;
}

/** What `stats()` returns: per route, and the budget shared by all routes. */
export interface HedgeStats {
  routes: Record<string, RouteStats>;
  budget: BudgetStats;
}

/**
 * The transport-independent state of one client: its routes (first match wins), their
 * estimators and counters, and the budget. Transports (fetch, the undici interceptor) hold one
 * and hand each routed call to `race`.
 */
export class Hedger {
  readonly routes: readonly RouteState[];
  readonly budget: HedgeBudget;
  readonly clock: Clock;

  constructor(settings: ClientSettings, clock: Clock) {
    this.routes = settings.routes.map((route) => new RouteState(route, clock));
    this.budget = settings.budget;
    this.clock = clock;
  }

  /** The first route matching `method` (upper case) and `target`, if any. */
  route(method: string, target: RequestTarget): RouteState | undefined {
    for (const route of this.routes) {
      if (route.settings.matches(method, target)) return route;
    }
    return undefined;
  }

  /** Current delay, window size and counters per route, and the budget's balance. */
  stats(): HedgeStats {
    const routes: Record<string, RouteStats> = {};
    for (const route of this.routes) {
      routes[route.settings.name] = {
        ...route.counters,
        delayMs: route.estimator.delayMs(),
        samples: route.estimator.samples(),
        latency: route.tail.stats(),
        keys: route.keys,
      };
    }
    return { routes, budget: this.budget.stats() };
  }
}
