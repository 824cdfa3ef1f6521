/**
 * The engine, for simulations and other transports (`tailcut/engine`): the race, the HTTP
 * policy, route state, validated settings, the clocks and the budget port. Less stable than the
 * main entry point.
 */

export { aimedShare } from '../budget/aim.js';
export {
  BUDGET_PORT,
  type BudgetPort,
  type HedgeGrant,
  isHedgeBudget,
  type RouteTap,
} from '../budget/port.js';
export { type Clock, realClock, type TimerHandle, VirtualClock } from '../clock.js';
export {
  type ClientSettings,
  type RouteSettings,
  validateClientOptions,
} from '../config/validate.js';
export { Call, type CallHost, type CallSpec } from './call.js';
export { Hedger } from './hedger.js';
export type { CallListener, Ending, EngineListener } from './listener.js';
export { type Answer, onOverload, type SendRule, sendRule, verdict } from './policy.js';
export {
  type AttemptContext,
  type AttemptKind,
  type AttemptOutcome,
  type AttemptReport,
  type HedgeOutcome,
  type RaceHandle,
  type RaceOutcome,
  type RaceSpec,
  type RaceWin,
  race,
  runRace,
  type Verdict,
} from './race.js';
export { RouteState } from './route-state.js';
