import type { KeyRequest } from '../request-view.js';

/**
 * The key under which a budget exposes its engine-facing side. `Symbol.for` makes it the same
 * symbol in every copy of tailcut loaded in a process, so a budget made by one copy works with a
 * client made by another, and other packages (a fleet-wide budget) can implement it.
 */
export const BUDGET_PORT: unique symbol = Symbol.for('tailcut.budget.port/v1') as never;

/** Why a hedge was or was not allowed. */
export type HedgeGrant = 'granted' | 'denied_budget' | 'denied_concurrency';

/** A point-in-time view of a budget. */
export interface BudgetStats {
  /** Whole hedges the budget would allow right now. */
  tokens: number;
  /** Hedges in flight now. */
  inFlightHedges: number;
  /** Hedges granted since creation. */
  granted: number;
  /** Hedges refused by the token balance since creation. */
  deniedBudget: number;
  /** Hedges refused by the concurrency cap since creation. */
  deniedConcurrency: number;
  /** Overload signals (429, 503, connection refused) withdrawn from the balance since creation. */
  penalties: number;
}

/** What the engine asks of a budget. Every method is synchronous: the hot path never waits. */
export interface BudgetPort {
  /** Credits the budget for one call of weight `cost` (1 unless the budget weighs calls). */
  deposit(cost?: number): void;
  /** Asks for one hedge of weight `cost`; a grant must be followed by one `release()`. */
  acquire(cost?: number): HedgeGrant;
  /** Marks a granted hedge as ended (won, lost, failed or cancelled). */
  release(): void;
  /** Gives back the token of a granted hedge that never reached the fleet (its dispatch failed at once). */
  refund(cost?: number): void;
  /** Withdraws one token for an overload signal (429, 503, connection refused). */
  penalize(): void;
  /**
   * The share of calls the budget can hedge at the current call rate (Infinity when
   * unconstrained): the delay rises to the percentile it pays for.
   */
  affordableShare(): number;
  /** True when calls are weighed by a cost function (the engine then asks `costOf`). */
  readonly weighted: boolean;
  /** The weight of a call (1 when the budget does not weigh calls). */
  costOf(request: KeyRequest): number;
  stats(): BudgetStats;
  /**
   * Optional, for budgets that share more than tokens (a fleet-wide budget): called once by each
   * client that takes this budget, with its routes, so that the budget can seed their delays.
   */
  attach?(routes: readonly RouteTap[]): void;
  /**
   * Optional: a primary attempt of route `route` ended after `ms`, at the commit point or lost to
   * a hedge (the latencies a route's delay is learned from; fast failures are not reported).
   */
  observe?(route: string, ms: number): void;
}

/** A client's route as a budget sees it through {@link BudgetPort.attach}. */
export interface RouteTap {
  /** The route's name. */
  readonly name: string;
  /**
   * Adds latencies (ms) to the route's delay estimator as if observed now: a warm start from
   * latencies seen elsewhere. They leave the window as any other value does.
   */
  seed(samplesMs: readonly number[]): void;
}

/**
 * A hedge budget: pass it as the `budget` option of several clients to bound their extra load
 * together. Made by `createBudget()` (or by another package implementing the port).
 */
export interface HedgeBudget {
  /** The engine-facing side; not for application code. */
  readonly [BUDGET_PORT]: BudgetPort;
  /** Current balance and counters. */
  stats(): BudgetStats;
}

/** True for a budget object (from this or another copy of tailcut). */
export function isHedgeBudget(value: unknown): value is HedgeBudget {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<HedgeBudget>)[BUDGET_PORT] === 'object'
  );
}
