/** @tailcut/lab: the fleet, the load, the strategies, the theory and the reports, as a library. */
export { writeBenchmarks } from './bench/benchmarks.js';
export { measureOverhead, type OverheadRow } from './bench/overhead.js';
export { type Fleet, type FleetStats, startFleet } from './fleet/fleet.js';
export { D2, D3, drawLatency, type Profile } from './fleet/profile.js';
export { type FleetCost, measureFleetCost } from './fleet-budget/cost.js';
export { REDIS_TESTS, startRedis, type TestRedis } from './fleet-budget/redis-server.js';
export {
  type BudgetRun,
  type FleetBudgetLabOptions,
  type FleetBudgetReport,
  fleetBudgetTable,
  runFleetBudget,
  type WarmStartRun,
} from './fleet-budget/run.js';
export { type LoadOptions, type LoadResult, openLoop } from './load/open-loop.js';
export { htmlReport, percentilePlot } from './report/html.js';
export { type Row, summarize, table } from './report/summary.js';
export { runScenario, type Scenario, STRATEGIES, type StrategyName } from './scenario.js';
export {
  aimedPercentile,
  recommend,
  resample,
  type SimCalls,
  type SimResult,
  type SimulateOptions,
  samplesNeeded,
  simulate,
  simulateTrace,
  unhedgedTail,
} from './sim/simulate.js';
export {
  readTrace,
  type Trace,
  TraceError,
  type TraceErrorCode,
  type TraceOptions,
  type TraceRoute,
} from './sim/trace.js';
export {
  cockatielRetry,
  fixedDelay,
  none,
  type Strategy,
  type StrategyOptions,
  tailcut,
} from './strategies.js';
export {
  hedgedAt,
  hedgedAtPercentile,
  retryAfter,
  survival,
  type Theory,
  unhedged,
} from './theory.js';
export { LOOPBACK_TLS } from './tls/loopback-cert.js';
