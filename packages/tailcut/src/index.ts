export {
  type BudgetOptions,
  type BudgetStats,
  createBudget,
  HedgeBudget,
} from './budget/budget.js';
export { type Clock, realClock, type TimerHandle, VirtualClock } from './clock.js';
export type {
  HedgedFetchOptions,
  HedgeOptions,
  KeyRequest,
  ReplicaOptions,
  RouteMatch,
  RouteOptions,
} from './config/options.js';
export type { HedgeStats, RouteStats } from './engine/hedger.js';
export type { RouteCounters } from './engine/route-state.js';
export { isTailcutError, TailcutError, type TailcutErrorCode } from './errors.js';
export type { TailStats } from './telemetry/tail.js';
export { DURATION_BUCKETS } from './telemetry/telemetry.js';
export { createHedgedFetch, type HedgedFetch } from './transport/fetch.js';
export {
  type HedgeInterceptor,
  type HedgeInterceptorOptions,
  hedge,
} from './transport/interceptor.js';
