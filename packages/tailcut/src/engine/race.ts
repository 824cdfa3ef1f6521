import type { BudgetPort } from '../budget/port.js';
import type { Clock, TimerHandle } from '../clock.js';
import type { DelayEstimator } from '../delay/estimator.js';
import { loserAbortError } from '../errors.js';
import type { RouteState } from './route-state.js';

/** Whether an attempt is the call's first or a later (hedge or retry) attempt. */
export type AttemptKind = 'primary' | 'hedge';

/** What the transport gets to run one attempt. */
export interface AttemptContext {
  /** 0 for the primary, then 1, 2, … in start order (`http.request.resend_count`). */
  readonly index: number;
  readonly kind: AttemptKind;
  /** Origin to send to, or `undefined` for the request's own origin. */
  readonly origin: string | undefined;
  /** Clock reading when the attempt started, ms. */
  readonly startedAt: number;
  /** Index of the replica in the route's list, or -1 for the request's own origin. */
  readonly replica: number;
  /** Aborted when the attempt is cancelled (lost, or the caller aborted). Created on first use. */
  readonly signal: AbortSignal;
  /** Registers the transport's own way to cancel the attempt (cheaper than a signal). */
  onCancel(target: Cancellable): void;
}

/** Something the engine can cancel with a reason. */
export interface Cancellable {
  cancel(reason: unknown): void;
}

/** How an attempt reports back; exactly one of the two, once, synchronously or later. */
export interface AttemptReport<T> {
  /** The attempt reached its commit point with `value`. */
  commit(value: T): void;
  /** The attempt failed before its commit point. */
  fail(error: unknown): void;
}

/**
 * How the engine treats an attempt's result at the commit point:
 * `accept` wins the race; `retry` is a failure that sends the next attempt at once (budget and
 * attempts allowing); `fail` is a failure that waits for the attempts in flight.
 */
export type Verdict = 'accept' | 'retry' | 'fail';

/** One call to race, as a transport describes it. */
export interface RaceSpec<T> extends RaceObserver<T> {
  route: RouteState;
  budget: BudgetPort;
  clock: Clock;
  /** The caller's signal, if any: aborts every attempt and ends the race with its reason. */
  signal?: AbortSignal | undefined;
  /** Attempts allowed for this call (1 when the request may not be sent twice). */
  maxAttempts: number;
  /** The delay estimator of the call's key, when the route conditions on one (else the route's). */
  estimator?: DelayEstimator | undefined;
  /** The call's weight in the budget (1 unless the budget weighs calls). */
  cost?: number | undefined;
  /** Starts one attempt, which reports through `report`. */
  run(ctx: AttemptContext, report: AttemptReport<T>): void;
  /** The replicas this call's primary may go to (all when undefined). */
  primaryAmong?: ((replica: number) => boolean) | undefined;
  /** Judges a result that reached the commit point. */
  judge(result: T, ctx: AttemptContext): Verdict;
  /** Releases a result that will not be returned (destroys its body). */
  discard(result: T): void;
}

/** How an attempt ended, as telemetry names it. */
export type AttemptOutcome = 'won' | 'lost' | 'failed' | 'cancelled';

/** What became of a hedge the engine considered, as telemetry names it. */
export type HedgeOutcome = 'sent' | 'won' | 'denied_budget' | 'denied_concurrency' | 'no_replica';

/** Optional hooks to observe a race (telemetry, overload policy). */
export interface RaceObserver<T> {
  /** `result` is set for a `won` attempt and a failed one that answered; `error` otherwise. */
  onAttemptEnd?(
    ctx: AttemptContext,
    outcome: AttemptOutcome,
    result: T | undefined,
    error: unknown,
  ): void;
  onHedge?(outcome: HedgeOutcome): void;
}

/** A race's result. */
export interface RaceWin<T> {
  value: T;
  /** The attempt that produced it. */
  attempt: AttemptContext;
  /** True when `value` is an acceptable answer, false when it is the last failure. */
  accepted: boolean;
}

/** How a race ended: a result, or an error (the last attempt's, or the caller's abort reason). */
export type RaceOutcome<T> = { win: RaceWin<T> } | { error: unknown };

// Per-call objects are class instances, not object or array literals: V8 may pretenure a
// literal's allocation site (allocate it in old space), and a dead old object that still points
// into a call keeps the whole call alive through young-generation collections. That cascade
// cost ~10 µs of GC per call on the interceptor's idle path (docs/design.md §3, per-call
// objects).

/** A decided race's result. */
class Won<T> implements RaceWin<T> {
  constructor(
    readonly value: T,
    readonly attempt: AttemptContext,
    readonly accepted: boolean,
  ) {}
}

/** The outcome of a race that produced a result. */
class WonOutcome<T> {
  constructor(readonly win: RaceWin<T>) {}
}

/** The outcome of a race that produced no result. */
class FailedOutcome {
  constructor(readonly error: unknown) {}
}

/** Handle on a running race. */
export interface RaceHandle {
  /** Ends the race with `reason`: every attempt is cancelled, no further one starts. */
  abort(reason: unknown): void;
}

/** One attempt: its context for the transport, and its report back to the race. */
class Attempt<T> implements AttemptContext, AttemptReport<T> {
  readonly index: number;
  readonly kind: AttemptKind;
  readonly origin: string | undefined;
  readonly replica: number;
  readonly startedAt: number;
  private readonly owner: Race<T>;
  private reported = false;
  /** True when the attempt failed while it was being started (its dispatch failed at once). */
  failedAtLaunch = false;
  private controller: AbortController | undefined;
  private canceller: Cancellable | undefined;
  private cancelledWith: { reason: unknown } | undefined;
  /** True from launch until the race has finished with this attempt. */
  live = true;
  /** The race's next attempt, in launch order. */
  next: Attempt<T> | undefined;

  constructor(
    race: Race<T>,
    index: number,
    kind: AttemptKind,
    replica: number,
    origin: string | undefined,
    now: number,
  ) {
    this.owner = race;
    this.index = index;
    this.kind = kind;
    this.replica = replica;
    this.origin = origin;
    this.startedAt = now;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.cancelledWith) this.controller.abort(this.cancelledWith.reason);
    }
    return this.controller.signal;
  }

  onCancel(target: Cancellable): void {
    if (this.cancelledWith) target.cancel(this.cancelledWith.reason);
    else this.canceller = target;
  }

  commit(value: T): void {
    if (this.reported) return;
    this.reported = true;
    this.owner.onResult(this, value);
  }

  fail(error: unknown): void {
    if (this.reported) return;
    this.reported = true;
    this.failedAtLaunch = this.owner.launching === this;
    this.owner.onError(this, error);
  }

  cancel(reason: unknown): void {
    if (this.cancelledWith) return;
    this.cancelledWith = { reason };
    this.canceller?.cancel(reason);
    this.controller?.abort(reason);
  }
}

/** The state of one race; see {@link runRace}. */
class Race<T> implements RaceHandle {
  private readonly spec: RaceSpec<T>;
  private readonly done: (outcome: RaceOutcome<T>) => void;
  /** The attempts in launch order (a chain, not an array: see the note above). */
  private first: Attempt<T> | undefined;
  private last: Attempt<T> | undefined;
  private launched = 0;
  private liveCount = 0;
  private settled = false;
  private timer: TimerHandle | undefined;
  /** The latest failed result, returned if nothing better comes, and its attempt. */
  private fallback: T | undefined;
  private fallbackAttempt: Attempt<T> | undefined;
  private lastError: unknown;
  /** The attempt being started right now, if any. */
  launching: Attempt<T> | undefined;
  /** How many times in a row the budget or the cap refused this call's timed hedge. */
  private refusals = 0;
  private readonly onTimer = () => {
    this.timer = undefined;
    if (this.tryHedge() !== 'refused') return;
    // Refused now is not refused for good: ask again after twice the wait (a call still running
    // by then is further into the tail, where a hedge matters most). Nothing waits for tokens
    // and nothing is reserved: the next ask is a new decision against the budget.
    const { route, clock } = this.spec;
    const wait = this.delayMs() * 2 ** ++this.refusals;
    if (wait <= route.settings.delay.maxDelayMs) this.timer = clock.setTimeout(this.onTimer, wait);
  };
  /** Made only for a call with a caller's signal. */
  private onAbort: (() => void) | undefined;

  constructor(spec: RaceSpec<T>, done: (outcome: RaceOutcome<T>) => void) {
    this.spec = spec;
    this.done = done;
  }

  start(): void {
    const { signal, route, budget } = this.spec;
    if (signal?.aborted) {
      this.settled = true;
      this.done(new FailedOutcome(signal.reason));
      return;
    }
    route.counters.calls++;
    budget.deposit(this.spec.cost);
    if (signal !== undefined) {
      this.onAbort = () => this.abort(signal.reason);
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    this.launch('primary', route.picker.primary(this.spec.primaryAmong));
  }

  /** True when an attempt of this race went to `replica` (the picker's tried set). */
  includes(replica: number): boolean {
    for (let attempt = this.first; attempt !== undefined; attempt = attempt.next) {
      if (attempt.replica === replica) return true;
    }
    return false;
  }

  abort(reason: unknown): void {
    this.finish(undefined, undefined, true, reason);
  }

  onResult(attempt: Attempt<T>, value: T): void {
    const spec = this.spec;
    if (this.settled || !attempt.live) {
      spec.discard(value);
      return;
    }
    const verdict = spec.judge(value, attempt);
    this.learn(attempt, verdict === 'accept');
    this.endAttempt(attempt, spec.clock.now() - attempt.startedAt);
    spec.onAttemptEnd?.(attempt, verdict === 'accept' ? 'won' : 'failed', value, undefined);
    if (verdict === 'accept') {
      this.finish(value, attempt, false, undefined);
      return;
    }
    // Keep the latest failed result to return if nothing better comes, but a `fail` verdict
    // (for example a hedge's 409) does not replace an earlier failure.
    if (this.fallbackAttempt === undefined || verdict === 'retry') {
      if (this.fallbackAttempt !== undefined) spec.discard(this.fallback as T);
      this.fallback = value;
      this.fallbackAttempt = attempt;
    } else {
      spec.discard(value);
    }
    this.afterFailure(verdict === 'retry');
  }

  onError(attempt: Attempt<T>, error: unknown): void {
    if (this.settled || !attempt.live) return;
    this.learn(attempt, false);
    this.endAttempt(attempt);
    this.spec.onAttemptEnd?.(attempt, 'failed', undefined, error);
    this.lastError = error;
    this.afterFailure(true);
  }

  /** The call's hedge delay: its estimator's, at the percentile the budget can afford. */
  private delayMs(): number {
    const spec = this.spec;
    return (spec.estimator ?? spec.route.estimator).delayMs(spec.budget.affordableShare());
  }

  /** Records a primary's latency: exact at commit, or a censored lower bound past the delay. */
  private learn(attempt: Attempt<T>, exact: boolean): void {
    if (attempt.kind !== 'primary') return;
    const { clock, route } = this.spec;
    const elapsed = clock.now() - attempt.startedAt;
    const estimator = this.spec.estimator ?? route.estimator;
    if (exact || elapsed >= estimator.delayMs()) estimator.record(elapsed, !exact);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.spec.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private endAttempt(attempt: Attempt<T>, elapsedMs?: number): void {
    attempt.live = false;
    this.liveCount--;
    this.spec.route.picker.end(attempt.replica, elapsedMs);
    if (attempt.kind === 'hedge') this.spec.budget.release();
  }

  private launch(kind: AttemptKind, replica: number): Attempt<T> {
    const { route, clock, maxAttempts } = this.spec;
    const attempt = new Attempt(
      this,
      this.launched,
      kind,
      replica,
      route.picker.origin(replica),
      clock.now(),
    );
    if (this.last === undefined) this.first = attempt;
    else this.last.next = attempt;
    this.last = attempt;
    this.launched++;
    this.liveCount++;
    route.picker.begin(replica);
    route.counters.attempts++;
    this.refusals = 0;
    this.clearTimer();
    if (this.launched < maxAttempts) {
      this.timer = clock.setTimeout(this.onTimer, this.delayMs());
    }
    this.launching = attempt;
    try {
      this.spec.run(attempt, attempt);
    } catch (err) {
      attempt.fail(err);
    }
    this.launching = undefined;
    return attempt;
  }

  /** Sends one more attempt if attempts, replicas and budget allow; says which it was. */
  private tryHedge(): 'sent' | 'refused' | 'none' {
    const { route, budget, maxAttempts } = this.spec;
    const counters = route.counters;
    if (this.settled || this.launched >= maxAttempts) return 'none';
    const replica = route.picker.hedge(this);
    const spec = this.spec;
    if (replica === undefined) {
      counters.hedgesNoReplica++;
      spec.onHedge?.('no_replica');
      return 'none';
    }
    const grant = budget.acquire(spec.cost);
    if (grant !== 'granted') {
      if (grant === 'denied_budget') counters.hedgesDeniedBudget++;
      else counters.hedgesDeniedConcurrency++;
      spec.onHedge?.(grant);
      return 'refused';
    }
    const attempt = this.launch('hedge', replica);
    if (attempt.failedAtLaunch) {
      // Its dispatch failed at once (a closed dispatcher, a bad request): nothing reached the
      // fleet, so it was not sent and its token goes back.
      budget.refund(spec.cost);
      return 'none';
    }
    counters.hedgesSent++;
    spec.onHedge?.('sent');
    return 'sent';
  }

  private afterFailure(retry: boolean): void {
    if (retry && this.tryHedge() === 'sent') return;
    if (this.liveCount > 0) return;
    // Nothing in flight: a pending timer could only start an attempt the failure just could
    // not start, so end the call with the last failure.
    this.spec.route.counters.failures++;
    this.finish(undefined, undefined, false, undefined);
  }

  /**
   * Ends the race: with `winner` (and its `value`) when an attempt was accepted; with the
   * caller's `reason` when `aborted`; else with the fallback, or the last error.
   */
  private finish(
    value: T | undefined,
    winner: Attempt<T> | undefined,
    aborted: boolean,
    reason: unknown,
  ): void {
    if (this.settled) return;
    this.settled = true;
    const spec = this.spec;
    this.clearTimer();
    if (this.onAbort !== undefined) spec.signal?.removeEventListener('abort', this.onAbort);
    for (let attempt = this.first; attempt !== undefined; attempt = attempt.next) {
      if (!attempt.live) continue;
      this.learn(attempt, false);
      // A loser's elapsed time is a lower bound of its latency: it still ranks it as slow.
      this.endAttempt(attempt, winner ? spec.clock.now() - attempt.startedAt : undefined);
      spec.onAttemptEnd?.(attempt, winner ? 'lost' : 'cancelled', undefined, undefined);
      attempt.cancel(aborted ? reason : loserAbortError());
    }
    const fallback = this.fallbackAttempt;
    this.fallbackAttempt = undefined;
    if (winner !== undefined) {
      if (winner.kind === 'hedge') {
        spec.route.counters.hedgesWon++;
        spec.onHedge?.('won');
      }
      if (fallback !== undefined) spec.discard(this.fallback as T);
      this.fallback = undefined;
      this.done(new WonOutcome(new Won(value as T, winner, true)));
    } else if (aborted) {
      if (fallback !== undefined) spec.discard(this.fallback as T);
      this.fallback = undefined;
      this.done(new FailedOutcome(reason));
    } else if (fallback !== undefined) {
      const result = this.fallback as T;
      this.fallback = undefined;
      this.done(new WonOutcome(new Won(result, fallback, false)));
    } else {
      this.done(new FailedOutcome(this.lastError));
    }
  }
}

/**
 * Races the attempts of one call: starts the primary, sends a hedge each time the route's delay
 * passes without an acceptable answer (and at once after a `retry` failure) while attempts,
 * replicas and budget allow, and ends with the first acceptable result, cancelling the others.
 * When every attempt fails it ends with the last failed result, or the last error when no
 * attempt produced a result. An abort (the handle's, or the caller's signal) ends it with the
 * abort's reason.
 *
 * `done` is called exactly once, synchronously at the moment the race is decided, so a
 * transport can hand the winner on without a tick in between. Nothing outlives that moment:
 * no timer, no listener on the caller's signal, no attempt left running.
 */
export function runRace<T>(spec: RaceSpec<T>, done: (outcome: RaceOutcome<T>) => void): RaceHandle {
  const race = new Race(spec, done);
  race.start();
  return race;
}

/** {@link runRace} as a promise: resolves with the result, rejects with the error. */
export function race<T>(spec: RaceSpec<T>): Promise<RaceWin<T>> {
  return new Promise((resolve, reject) => {
    runRace(spec, (outcome) => ('win' in outcome ? resolve(outcome.win) : reject(outcome.error)));
  });
}
