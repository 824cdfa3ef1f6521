import type { BudgetPort } from '../budget/port.js';
import type { Clock } from '../clock.js';
import type { DelayEstimator } from '../delay/estimator.js';
import type { KeyRequest } from '../request-view.js';
import { type CallListener, type Ending, SILENT } from './listener.js';
import { type Answer, onOverload, verdict } from './policy.js';
import {
  type AttemptContext,
  type AttemptOutcome,
  type AttemptReport,
  type HedgeOutcome,
  type RaceHandle,
  type RaceOutcome,
  type RaceSpec,
  runRace,
  type Verdict,
} from './race.js';
import type { RouteState } from './route-state.js';
import { type StreamSink, StreamWatch } from './stream-watch.js';

/** One routed call, as a transport describes it to the engine. */
export interface CallSpec<T extends Answer> {
  route: RouteState;
  /** Upper-case method. */
  method: string;
  /** The request's own origin (where an attempt goes when the route has no replicas). */
  origin: string;
  /** Attempts allowed for this call (1 when it may not be sent twice). */
  maxAttempts: number;
  /** What the route's `key` and the budget's `cost` see of the request; asked at most once. */
  request(): KeyRequest;
  /** The caller's signal, if the transport has one: aborts the call with its reason. */
  signal?: AbortSignal | undefined;
  /**
   * Starts one attempt, which reports through `report`. `trace` is the telemetry context to send
   * it in (undefined when nothing is traced).
   */
  run(ctx: AttemptContext, report: AttemptReport<T>, trace: unknown): void;
  /** Releases a result that will not be returned (destroys its body). */
  discard(result: T): void;
  /** The replicas this call's primary may go to (all when undefined). */
  primaryAmong?: ((replica: number) => boolean) | undefined;
}

/** What the engine needs of its client while a call runs. */
export interface CallHost {
  readonly clock: Clock;
  readonly budget: BudgetPort;
  callStarted(route: RouteState, method: string): CallListener;
}

/**
 * The engine's side of one call: it picks the delay estimator (per key) and the call's weight,
 * judges answers and reacts to overload (the HTTP policy), tells telemetry what happens, and
 * watches the winner's body (first byte, gaps, chunk timeout) until the transport ends the call.
 */
export class Call<T extends Answer> implements RaceSpec<T>, StreamSink {
  readonly route: RouteState;
  readonly budget: BudgetPort;
  readonly clock: Clock;
  readonly maxAttempts: number;
  readonly signal: AbortSignal | undefined;
  readonly estimator: DelayEstimator | undefined;
  readonly cost: number | undefined;
  readonly primaryAmong: ((replica: number) => boolean) | undefined;
  private readonly listener: CallListener;
  private readonly startedAt: number;
  private watch: StreamWatch | undefined;
  private ended = false;

  constructor(
    host: CallHost,
    private readonly spec: CallSpec<T>,
  ) {
    const { route } = spec;
    this.route = route;
    this.budget = host.budget;
    this.clock = host.clock;
    this.maxAttempts = spec.maxAttempts;
    this.signal = spec.signal;
    this.primaryAmong = spec.primaryAmong;
    this.startedAt = host.clock.now();
    this.listener = host.callStarted(route, spec.method);
    const key = route.settings.key;
    this.estimator = key === undefined ? undefined : route.estimatorFor(keyOf(key, spec));
    this.cost = this.budget.weighted ? this.budget.costOf(spec.request()) : undefined;
  }

  /** Starts the race; `done` is called once, synchronously when it is decided. */
  start(done: (outcome: RaceOutcome<T>) => void): RaceHandle {
    return runRace(this, done);
  }

  run(ctx: AttemptContext, report: AttemptReport<T>): void {
    const trace = this.listener.attemptStarted(ctx, ctx.origin ?? this.spec.origin);
    this.spec.run(ctx, report, trace);
  }

  judge(result: T, ctx: AttemptContext): Verdict {
    return verdict(this.route, result, ctx.kind);
  }

  discard(result: T): void {
    this.spec.discard(result);
  }

  onAttemptEnd(
    ctx: AttemptContext,
    outcome: AttemptOutcome,
    result: T | undefined,
    error: unknown,
  ): void {
    const seconds = (this.clock.now() - ctx.startedAt) / 1000;
    this.listener.attemptEnded(ctx, outcome, seconds, { status: result?.status, error });
    if (outcome === 'won' || outcome === 'failed') this.route.picker.outcome(ctx.replica, outcome);
    if (
      ctx.kind === 'primary' &&
      (outcome === 'won' || outcome === 'lost' || result !== undefined)
    ) {
      this.budget.observe?.(this.route.settings.name, seconds * 1000);
    }
    if (outcome === 'failed') onOverload(this.route, this.budget, ctx.replica, result, error);
  }

  onHedge(outcome: HedgeOutcome): void {
    this.listener.hedge(outcome);
  }

  /**
   * The winner's headers reached the caller: the body watch starts (first byte, chunk gaps, and
   * the route's `chunkTimeoutMs`, which calls `onStall`; the caller's own pauses do not count).
   */
  bodyStarted(onStall: (error: Error) => void, callerPaused: () => boolean): void {
    this.watch = new StreamWatch(
      this.route,
      this.clock,
      this.startedAt,
      this,
      onStall,
      callerPaused,
    );
  }

  firstByte(ms: number): void {
    this.listener.firstByte(ms / 1000);
  }

  chunkGap(ms: number): void {
    this.listener.chunkGap(ms / 1000);
  }

  firstToken(ms: number): void {
    this.listener.firstToken(ms / 1000);
  }

  tokenGap(ms: number): void {
    this.listener.tokenGap(ms / 1000);
  }

  /**
   * True when output events after the first still matter: for telemetry (token counts and
   * gaps), or for a `chunkTimeoutMs` that counts output events. Otherwise the transport stops
   * framing the stream once the caller has it.
   */
  get countsTokens(): boolean {
    return this.listener !== SILENT || this.route.settings.chunkTimeoutMs !== undefined;
  }

  /** A body chunk reached the caller. */
  chunk(): void {
    this.watch?.chunk();
  }

  /** Output events (first-token routes) reached the caller in the last chunk. */
  tokens(count: number): void {
    this.watch?.tokens(count);
  }

  /**
   * The call is over (its body ended or failed, or it failed before an answer): records its
   * duration in the route's tail window and tells telemetry. Later calls are ignored.
   */
  end(winner: AttemptContext | undefined, ending: Ending): void {
    if (this.ended) return;
    this.ended = true;
    const counts = this.watch?.end() ?? { chunks: 0, tokens: 0 };
    const ms = this.clock.now() - this.startedAt;
    const slow = this.route.recordCall(ms);
    this.listener.ended(winner, ms / 1000, ending, slow, counts);
  }
}

/** The route's conditioning key for a call; a key function that throws counts as none. */
function keyOf(
  key: (request: KeyRequest) => string | undefined,
  spec: CallSpec<Answer>,
): string | undefined {
  try {
    const k = key(spec.request());
    return typeof k === 'string' ? k : undefined;
  } catch {
    return undefined;
  }
}
