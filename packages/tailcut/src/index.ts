export type { BudgetStats, HedgeBudget } from './budget/port.js';
export { createBudget } from './budget/token-budget.js';
export type { Clock, TimerHandle } from './clock.js';
export type {
  BudgetOptions,
  FirstTokenRule,
  HedgedFetchOptions,
  HedgeOptions,
  KeyRequest,
  ReplicaOptions,
  RouteMatch,
  RouteOptions,
  StreamEvent,
} from './config/options.js';
export type { HedgeStats, RouteStats } from './engine/hedger.js';
export type { KeyDelay, RouteCounters } from './engine/route-state.js';
export type { TailStats } from './engine/tail-window.js';
export { isTailcutError, TailcutError, type TailcutErrorCode } from './errors.js';
export { DURATION_BUCKETS, INSTRUMENTS, type InstrumentSpec } from './telemetry/instruments.js';
export { createHedgedFetch, type HedgedFetch } from './transport/fetch.js';
export { type HedgeInterceptor, type HedgeInterceptorOptions, hedge } from './transport/hedge.js';
