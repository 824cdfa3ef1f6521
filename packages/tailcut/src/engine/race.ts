import type { HedgeBudget } from '../budget/budget.js';
import type { Clock, TimerHandle } from '../clock.js';
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
  /** Aborted when the attempt loses, or when the caller aborts. */
  readonly signal: AbortSignal;
}

/**
 * How the engine treats an attempt's result at the commit point:
 * `accept` wins the race; `retry` is a failure that sends the next attempt at once (budget and
 * attempts allowing); `fail` is a failure that waits for the attempts in flight.
 */
export type Verdict = 'accept' | 'retry' | 'fail';

/** One call to race, as a transport describes it. */
export interface RaceSpec<T> {
  route: RouteState;
  budget: HedgeBudget;
  clock: Clock;
  /** The caller's signal: aborts every attempt and rejects with its reason. */
  signal?: AbortSignal | undefined;
  /** Attempts allowed for this call (1 when the request may not be sent twice). */
  maxAttempts: number;
  /** Runs one attempt; settles at the commit point. */
  run(ctx: AttemptContext): Promise<T>;
  /** Judges a result that reached the commit point. */
  judge(result: T, ctx: AttemptContext): Verdict;
  /** Releases a result that will not be returned (destroys its body). */
  discard(result: T): void;
}

/** The value a race resolves with. */
export interface RaceWin<T> {
  value: T;
  /** The attempt that produced it. */
  attempt: AttemptContext;
  /** True when `value` is an acceptable answer, false when it is the last failure. */
  accepted: boolean;
  /** Aborts the attempt that produced `value` (used to cancel its body later). */
  abort(reason: unknown): void;
}

interface Attempt {
  ctx: AttemptContext;
  replica: number;
  controller: AbortController;
  startedAt: number;
}

/**
 * Races attempts of one call: starts the primary, sends a hedge each time the route's delay
 * passes without an acceptable answer (and at once after a `retry` failure) while attempts,
 * replicas and budget allow, settles with the first acceptable result, aborts the others.
 * When every attempt fails it resolves with the last failed result, or rejects with the last
 * error when no attempt produced a result. The caller's abort rejects with the caller's reason.
 *
 * Nothing outlives the returned promise: no timer, no listener on the caller's signal, no
 * attempt left running.
 */
export function race<T>(spec: RaceSpec<T>): Promise<RaceWin<T>> {
  return new Promise<RaceWin<T>>((resolve, reject) => {
    const { route, budget, clock, signal, maxAttempts } = spec;
    const { counters, estimator, picker } = route;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    counters.calls++;
    budget.deposit();

    const live = new Set<Attempt>();
    const tried: number[] = [];
    let settled = false;
    let timer: TimerHandle | undefined;
    let fallback: { value: T; attempt: Attempt } | undefined;
    let lastError: unknown;

    const onAbort = () => finish(undefined, signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });

    /** Records a primary's latency: exact at commit, or a censored lower bound past the delay. */
    const learn = (attempt: Attempt, exact: boolean) => {
      if (attempt.ctx.kind !== 'primary') return;
      const elapsed = clock.now() - attempt.startedAt;
      if (exact || elapsed >= estimator.delayMs()) estimator.record(elapsed);
    };

    const clearTimer = () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
    };

    const end = (attempt: Attempt) => {
      live.delete(attempt);
      picker.end(attempt.replica);
      if (attempt.ctx.kind === 'hedge') budget.release();
    };

    const launch = (kind: 'primary' | 'hedge', replica: number) => {
      const controller = new AbortController();
      const ctx: AttemptContext = {
        index: tried.length,
        kind,
        origin: picker.origin(replica),
        signal: controller.signal,
      };
      const attempt: Attempt = { ctx, replica, controller, startedAt: clock.now() };
      tried.push(replica);
      live.add(attempt);
      picker.begin(replica);
      counters.attempts++;
      clearTimer();
      if (tried.length < maxAttempts) timer = clock.setTimeout(onTimer, estimator.delayMs());
      let pending: Promise<T>;
      try {
        pending = spec.run(ctx);
      } catch (err) {
        pending = Promise.reject(err);
      }
      pending.then(
        (value) => onResult(attempt, value),
        (err: unknown) => onError(attempt, err),
      );
    };

    /** Sends one more attempt if attempts, replicas and budget allow. */
    const hedge = (): boolean => {
      if (settled || tried.length >= maxAttempts) return false;
      const replica = picker.hedge(tried);
      if (replica === undefined) {
        counters.hedgesNoReplica++;
        return false;
      }
      const grant = budget.acquire();
      if (grant === 'denied_budget') counters.hedgesDeniedBudget++;
      if (grant === 'denied_concurrency') counters.hedgesDeniedConcurrency++;
      if (grant !== 'granted') return false;
      counters.hedgesSent++;
      launch('hedge', replica);
      return true;
    };

    const onTimer = () => {
      timer = undefined;
      hedge();
    };

    const onResult = (attempt: Attempt, value: T) => {
      if (settled || !live.has(attempt)) {
        spec.discard(value);
        return;
      }
      const verdict = spec.judge(value, attempt.ctx);
      if (verdict === 'accept') {
        learn(attempt, true);
        end(attempt);
        finish({ value, attempt });
        return;
      }
      learn(attempt, false);
      end(attempt);
      // Keep the latest failed result to return if nothing better comes, but a `fail` verdict
      // (for example a hedge's 409) does not replace an earlier failure.
      if (fallback === undefined || verdict === 'retry') {
        if (fallback !== undefined) spec.discard(fallback.value);
        fallback = { value, attempt };
      } else {
        spec.discard(value);
      }
      afterFailure(verdict === 'retry');
    };

    const onError = (attempt: Attempt, err: unknown) => {
      if (settled || !live.has(attempt)) return;
      learn(attempt, false);
      end(attempt);
      lastError = err;
      afterFailure(true);
    };

    const afterFailure = (retry: boolean) => {
      if (retry && hedge()) return;
      if (live.size > 0) return;
      // Nothing in flight: a pending timer could only start an attempt the failure just could
      // not start, so end the call with the last failure.
      counters.failures++;
      finish(undefined, undefined);
    };

    function finish(win: { value: T; attempt: Attempt } | undefined, abortReason?: unknown) {
      if (settled) return;
      settled = true;
      clearTimer();
      signal?.removeEventListener('abort', onAbort);
      const callerAborted = win === undefined && abortReason !== undefined;
      for (const attempt of live) {
        learn(attempt, false);
        end(attempt);
        attempt.controller.abort(callerAborted ? abortReason : loserAbortError());
      }
      if (win !== undefined) {
        if (win.attempt.ctx.kind === 'hedge') counters.hedgesWon++;
        if (fallback !== undefined) spec.discard(fallback.value);
        resolve(settle(win.value, win.attempt, true));
      } else if (callerAborted) {
        if (fallback !== undefined) spec.discard(fallback.value);
        reject(abortReason);
      } else if (fallback !== undefined) {
        resolve(settle(fallback.value, fallback.attempt, false));
      } else {
        reject(lastError);
      }
    }

    launch('primary', picker.primary());
  });
}

function settle<T>(value: T, attempt: Attempt, accepted: boolean): RaceWin<T> {
  return {
    value,
    attempt: attempt.ctx,
    accepted,
    abort: (reason) => attempt.controller.abort(reason),
  };
}
