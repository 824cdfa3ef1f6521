import { BUDGET_PORT, type BudgetPort, type BudgetStats, isHedgeBudget } from '../budget/port.js';
import { TokenBudget } from '../budget/token-budget.js';
import { type Clock, realClock } from '../clock.js';
import type { ClientSettings } from '../config/validate.js';
import type { ReplicaStats } from '../replicas/picker.js';
import type { RequestTarget } from '../routes/matcher.js';
import { Call, type CallHost, type CallSpec } from './call.js';
import { type CallListener, type EngineListener, SILENT } from './listener.js';
import type { Answer } from './policy.js';
import { type KeyDelay, type RouteCounters, RouteState } from './route-state.js';
import type { TailStats } from './tail-window.js';

/** A route's figures, as `stats()` reports them. */
export interface RouteStats extends RouteCounters {
  /**
   * The hedge delay a call starting now without a key would use, ms. On a route with a `key`,
   * calls with a key learn in `byKey` instead (this stays at `initialDelayMs`, `samples` at 0,
   * unless some calls have no key).
   */
  delayMs: number;
  /** Latencies in the route's rolling window (calls without a key). */
  samples: number;
  /** The route's recent calls, end to end: percentiles, max, CV, p99/p50, slow rate (ms). */
  latency: TailStats;
  /** Conditioning keys with a delay estimator of their own (routes with a `key`). */
  keys: number;
  /** Per conditioning key (e.g. model): the delay a call with that key would use now, and its samples. */
  byKey: Record<string, KeyDelay>;
  /** Per replica, by its `name` (the origin unless named): attempts, wins, failures, latency. */
  replicas: Record<string, ReplicaStats>;
}

/** What `stats()` returns: per route, and the budget shared by all routes. */
export interface HedgeStats {
  routes: Record<string, RouteStats>;
  budget: BudgetStats;
}

/**
 * The transport-independent state of one client: its clock, routes (first match wins), their
 * estimators and counters, the budget, and the listener (telemetry) that observes it all.
 * Transports (the undici interceptor, and fetch over it) and the lab's simulator hold one and
 * hand each routed call to {@link Hedger.call}.
 */
export class Hedger implements CallHost {
  readonly routes: readonly RouteState[];
  readonly budget: BudgetPort;
  readonly clock: Clock;
  private readonly listener: EngineListener | undefined;

  /**
   * `listen` makes the client's listener (telemetry) once the engine exists, so that it can
   * read the engine's state (gauges); without it, nothing is observed.
   */
  constructor(settings: ClientSettings, listen?: (hedger: Hedger) => EngineListener) {
    const clock = settings.clock ?? realClock;
    this.clock = clock;
    this.routes = settings.routes.map((route) => new RouteState(route, clock));
    this.budget = isHedgeBudget(settings.budget)
      ? settings.budget[BUDGET_PORT]
      : new TokenBudget(settings.budget, clock);
    this.budget.attach?.(
      this.routes.map((route) => ({
        name: route.settings.name,
        seed: (samplesMs: readonly number[]) => route.seed(samplesMs),
      })),
    );
    this.listener = listen?.(this);
  }

  /** The first route matching `method` (upper case) and `target`, if any. */
  route(method: string, target: RequestTarget): RouteState | undefined {
    for (const route of this.routes) {
      if (route.settings.matches(method, target)) return route;
    }
    return undefined;
  }

  /** Prepares a routed call; `start` it to race its attempts. */
  call<T extends Answer>(spec: CallSpec<T>): Call<T> {
    return new Call(this, spec);
  }

  callStarted(route: RouteState, method: string): CallListener {
    return this.listener?.callStarted(route, method) ?? SILENT;
  }

  /** Current delay, window size and counters per route, and the budget's balance. */
  stats(): HedgeStats {
    const routes: Record<string, RouteStats> = Object.create(null);
    for (const route of this.routes) {
      routes[route.settings.name] = {
        ...route.counters,
        delayMs: route.estimator.delayMs(),
        samples: route.estimator.samples(),
        latency: route.tail.stats(),
        keys: route.keys,
        byKey: route.keyDelays(),
        replicas: route.picker.stats(),
      };
    }
    return { routes, budget: this.budget.stats() };
  }
}
