import type { Clock } from '../clock.js';
import type { RouteSettings } from '../config/validate.js';
import { DelayEstimator } from '../delay/estimator.js';
import { ReplicaPicker } from '../replicas/picker.js';
import { TailWindow } from './tail-window.js';

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
  /** Calls slower, end to end, than the route's `sloMs`. */
  slowCalls: number;
}

/** The delay of one conditioning key, as `stats()` reports it. */
export interface KeyDelay {
  /** The hedge delay a call with this key starting now would use, ms. */
  delayMs: number;
  /** Latencies of this key the delay is read from. */
  samples: number;
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
    slowCalls: 0,
  };
  /** Recent end-to-end call durations, for the tail figures. */
  readonly tail: TailWindow;
  private readonly keyed = new Map<string, DelayEstimator>();

  constructor(
    settings: RouteSettings,
    private readonly clock: Clock,
  ) {
    this.settings = settings;
    this.estimator = new DelayEstimator(settings.delay, clock);
    this.picker = new ReplicaPicker(settings.replicas, clock);
    this.tail = new TailWindow(settings.delay.windowMs, clock, settings.sloMs);
  }

  /**
   * The delay estimator of a conditioning key (for example the model of an LLM call), so a fast
   * small model does not share a p95 with a slow large one. At most `maxKeys` keys are kept, the
   * least recently used dropped first; without a key, the route's own estimator.
   */
  estimatorFor(key: string | undefined): DelayEstimator {
    if (key === undefined) return this.estimator;
    let e = this.keyed.get(key);
    if (e === undefined) {
      e = new DelayEstimator(this.settings.delay, this.clock);
      if (this.keyed.size >= this.settings.maxKeys) {
        const oldest = this.keyed.keys().next().value;
        if (oldest !== undefined) this.keyed.delete(oldest);
      }
    } else {
      this.keyed.delete(key);
    }
    this.keyed.set(key, e);
    return e;
  }

  /** Keys with an estimator of their own now. */
  get keys(): number {
    return this.keyed.size;
  }

  /** Each key's delay now and the latencies it rests on (least recently used first). */
  keyDelays(): Record<string, KeyDelay> {
    const out: Record<string, KeyDelay> = Object.create(null);
    for (const [key, e] of this.keyed) out[key] = { delayMs: e.delayMs(), samples: e.samples() };
    return out;
  }

  /** Adds latencies (ms) to the route's own delay estimator, as if observed now (a warm start). */
  seed(samplesMs: readonly number[]): void {
    for (const ms of samplesMs) this.estimator.record(ms);
  }

  /** Records a finished call's end-to-end duration; true when it was slower than the SLO. */
  recordCall(ms: number): boolean {
    this.tail.record(ms);
    const slow = this.settings.sloMs !== undefined && ms > this.settings.sloMs;
    if (slow) this.counters.slowCalls++;
    return slow;
  }
}
