import type { Clock } from '../clock.js';
import type { RouteSettings } from '../config/validate.js';
import { DelayEstimator } from '../delay/estimator.js';
import { ReplicaPicker } from '../replicas/picker.js';

/** Counters of one route since the client was created. */
export interface RouteCounters {
  /** Calls routed here. */
  calls: number;
  /** Attempts started, primaries and hedges. */
  attempts: number;
  /** Hedges sent. */
  hedgesSent: number;
  /** Calls won by a hedge. */
  hedgesWon: number;
  /** Hedges skipped: the budget's balance was empty. */
  hedgesDeniedBudget: number;
  /** Hedges skipped: too many hedges in flight. */
  hedgesDeniedConcurrency: number;
  /** Hedges skipped: every replica had been tried. */
  hedgesNoReplica: number;
  /** Calls that ended without an acceptable answer (last failure returned or thrown). */
  failures: number;
}

/** The live state of a route: its settings, delay estimator, replica picker and counters. */
export class RouteState {
  readonly settings: RouteSettings;
  readonly estimator: DelayEstimator;
  readonly picker: ReplicaPicker;
  readonly counters: RouteCounters = {
    calls: 0,
    attempts: 0,
    hedgesSent: 0,
    hedgesWon: 0,
    hedgesDeniedBudget: 0,
    hedgesDeniedConcurrency: 0,
    hedgesNoReplica: 0,
    failures: 0,
  };

  constructor(settings: RouteSettings, clock: Clock) {
    this.settings = settings;
    this.estimator = new DelayEstimator(settings.delay, clock);
    this.picker = new ReplicaPicker(settings.replicas);
  }
}
