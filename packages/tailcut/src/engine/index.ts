/**
 * The engine, for simulations and other transports (`tailcut/engine`): the race, route state
 * and validated settings. Less stable than the main entry point.
 */
export {
  type ClientSettings,
  type RouteSettings,
  validateClientOptions,
} from '../config/validate.js';
export { Hedger } from './hedger.js';
export {
  type AttemptContext,
  type AttemptReport,
  type RaceHandle,
  type RaceOutcome,
  type RaceSpec,
  race,
  runRace,
  type Verdict,
} from './race.js';
export { RouteState } from './route-state.js';
