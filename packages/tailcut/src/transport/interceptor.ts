import { randomUUID } from 'node:crypto';
import { type Context, context, propagation } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { HedgeBudget } from '../budget/budget.js';
import type { Clock } from '../clock.js';
import { realClock } from '../clock.js';
import { invalid } from '../config/checks.js';
import type { HedgedFetchOptions, KeyRequest } from '../config/options.js';
import {
  type ClientSettings,
  type RouteSettings,
  validateClientOptions,
} from '../config/validate.js';
import type { DelayEstimator } from '../delay/estimator.js';
import { Hedger, type HedgeStats } from '../engine/hedger.js';
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
} from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { loserAbortError } from '../errors.js';
import { retryAfterMs } from '../replicas/picker.js';
import { type CallTrace, Telemetry } from '../telemetry/telemetry.js';
import type { BufferLimits } from './body.js';
import { ByteQuota } from './byte-quota.js';
import { type HeaderRecord, toHeaderRecord } from './dispatch-headers.js';
import { OriginCache, pathnameOf } from './origins.js';
import { type CallPlan, planCall, verdict } from './plan.js';
import { StreamWatch } from './stream-watch.js';

/** Options of the {@link hedge} interceptor: those of createHedgedFetch, less the dispatcher. */
export type HedgeInterceptorOptions = Omit<HedgedFetchOptions, 'dispatcher'>;

/** An undici interceptor (for `Dispatcher.compose`) that hedges the requests of its routes. */
export interface HedgeInterceptor extends Dispatcher.DispatcherComposeInterceptor {
  /** Per-route delay, window size and counters, and the budget's balance. */
  stats(): HedgeStats;
}

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Record<string, string | string[] | undefined>;

/**
 * The controller the caller's handler gets. Before the race is decided, abort ends the race
 * (cancelling every attempt); after, pause, resume and abort go to the winning attempt.
 */
class CallController implements Controller {
  private raceHandle: RaceHandle | undefined;
  private winner: Controller | undefined;
  private pausedByCaller = false;
  private abortReason: Error | null = null;
  /** Runs when the caller resumes: flushes what the winner held before it was attached. */
  onResume: (() => void) | undefined;

  get aborted(): boolean {
    return this.abortReason !== null;
  }
  get paused(): boolean {
    return this.pausedByCaller;
  }
  get reason(): Error | null {
    return this.abortReason;
  }
  get rawHeaders() {
    return this.winner?.rawHeaders ?? null;
  }
  get rawTrailers() {
    return this.winner?.rawTrailers ?? null;
  }

  bind(race: RaceHandle): void {
    this.raceHandle = race;
  }

  attach(winner: Controller): void {
    this.winner = winner;
  }

  abort(reason: Error): void {
    if (this.abortReason !== null) return;
    this.abortReason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    this.raceHandle?.abort(this.abortReason);
    this.winner?.abort(this.abortReason);
  }

  pause(): void {
    this.pausedByCaller = true;
    this.winner?.pause();
  }

  resume(): void {
    if (!this.pausedByCaller) return;
    this.pausedByCaller = false;
    if (this.onResume) this.onResume();
    else this.winner?.resume();
  }
}

/** What the winner tells its call as the caller gets the body. */
interface Delivery {
  chunk(): void;
  end(error: unknown): void;
}

/**
 * The handler of one attempt. It reports at the commit point (response start, or first body
 * chunk); the race decides synchronously, so a winner is attached to the caller's handler at
 * once and its body flows straight through. A result the race keeps for later (the last
 * failure, returned if nothing better comes) is held, its socket paused, until it is attached or
 * cancelled.
 */
class AttemptHandler implements Handler {
  status = 0;
  private state: 'waiting' | 'held' | 'attached' | 'cancelled' = 'waiting';
  private controller: Controller | undefined;
  private pausedHeld = false;
  private cancelReason: unknown;
  private headers: Headers = {};
  private statusMessage: string | undefined;
  private chunks: Buffer[] = [];
  private ending: { trailers: Headers } | { error: Error } | undefined;
  private caller: { handler: Handler; controller: CallController } | undefined;
  /** Told of each chunk the caller gets, and of the end (undefined) or error it gets. */
  private delivery: Delivery | undefined;
  constructor(
    private readonly report: AttemptReport<AttemptHandler>,
    private readonly route: RouteState,
    private readonly ctx: AttemptContext,
  ) {}

  /** The answer's Retry-After header, if any. */
  get retryAfter(): string | string[] | undefined {
    return this.headers['retry-after'];
  }

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.state === 'cancelled') controller.abort(this.cancelReason as Error);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Headers,
    statusMessage?: string,
  ): void {
    if (statusCode < 200 || this.state === 'cancelled') return; // 1xx: not the answer
    this.controller = controller;
    this.status = statusCode;
    this.headers = headers;
    this.statusMessage = statusMessage;
    // Commit on the headers, unless the route commits on the first byte of an acceptable answer.
    if (
      this.route.settings.commitOn !== 'first-byte' ||
      verdict(this.route, statusCode, this.ctx) !== 'accept'
    ) {
      this.commit();
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.state === 'cancelled') return;
    const caller = this.caller;
    if (caller !== undefined && this.chunks.length === 0) {
      this.delivery?.chunk();
      caller.handler.onResponseData?.(caller.controller, chunk);
      return;
    }
    this.chunks.push(chunk);
    if (this.state === 'waiting') this.commit();
    if (this.state === 'held' && !this.pausedHeld) {
      this.pausedHeld = true;
      controller.pause();
    }
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    this.finishWith({ trailers });
  }

  onResponseError(_controller: Controller, error: Error): void {
    if (this.state === 'waiting') {
      this.state = 'cancelled';
      this.report.fail(error);
      return;
    }
    this.finishWith({ error });
  }

  /** Hands the response, from its start, to the caller's handler. */
  attach(handler: Handler, controller: CallController, delivery: Delivery): void {
    this.delivery = delivery;
    this.state = 'attached';
    this.caller = { handler, controller };
    if (this.controller !== undefined) controller.attach(this.controller);
    controller.onResume = () => this.flush();
    handler.onResponseStart?.(controller, this.status, this.headers, this.statusMessage);
    this.flush();
  }

  /** Aborts the attempt (lost, not needed, or the caller aborted). */
  cancel(reason: unknown): void {
    if (this.state === 'cancelled') return;
    this.state = 'cancelled';
    this.cancelReason = reason;
    this.chunks = [];
    this.controller?.abort(reason as Error);
  }

  private commit(): void {
    this.state = 'held';
    this.report.commit(this);
  }

  private finishWith(end: { trailers: Headers } | { error: Error }): void {
    if (this.state === 'cancelled') return;
    this.ending = end;
    // An empty body ends the response: that is its commit point too.
    if (this.state === 'waiting') this.commit();
    else if (this.state === 'attached') this.flush();
  }

  /** Delivers held chunks and the end to the caller, as far as the caller is not paused. */
  private flush(): void {
    const caller = this.caller;
    if (caller === undefined) return;
    const { handler, controller } = caller;
    while (this.chunks.length > 0) {
      if (controller.paused || controller.aborted) return;
      this.delivery?.chunk();
      handler.onResponseData?.(controller, this.chunks.shift() as Buffer);
    }
    const end = this.ending;
    if (end !== undefined) {
      // The caller stays attached: if its onResponseEnd throws (undici's retry handler does,
      // to ask for a retry), undici reports that error here and it is forwarded too.
      this.ending = undefined;
      this.delivery?.end('trailers' in end ? undefined : end.error);
      if ('trailers' in end) handler.onResponseEnd?.(controller, end.trailers);
      else handler.onResponseError?.(controller, end.error);
      return;
    }
    controller.onResume = undefined;
    if (this.pausedHeld && !controller.paused) {
      this.pausedHeld = false;
      this.controller?.resume();
    }
  }
}

/**
 * One routed call through the interceptor: the race's spec (run, judge, discard) and what the
 * caller's handler gets when the race is decided.
 */
class HedgedCall implements RaceSpec<AttemptHandler> {
  readonly budget: HedgeBudget;
  readonly clock: Clock;
  readonly maxAttempts: number;
  private headers: HeaderRecord | undefined;
  private headersElsewhere: HeaderRecord | undefined;
  private readonly trace: CallTrace;
  private readonly startedAt: number;
  /** The delay estimator of this call's key, when the route has a `key` function. */
  readonly estimator: DelayEstimator | undefined;
  /** This call's weight in the budget, when the budget weighs calls. */
  readonly cost: number | undefined;
  private keyRequest: KeyRequest | undefined;
  /** The trace context of the attempt about to run, when an SDK records spans. */
  private attemptContext: Context | undefined;

  constructor(
    readonly route: RouteState,
    hedger: Hedger,
    private readonly dispatch: Dispatcher.Dispatch,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly handler: Handler,
    private readonly controller: CallController,
    private readonly origin: string,
    private readonly plan: CallPlan,
    private readonly telemetry: Telemetry,
  ) {
    this.startedAt = hedger.clock.now();
    this.budget = hedger.budget;
    this.clock = hedger.clock;
    this.maxAttempts = plan.maxAttempts;
    this.trace = telemetry.startCall(route, opts.method.toUpperCase());
    const key = route.settings.key;
    this.estimator = key === undefined ? undefined : route.estimatorFor(this.keyOf(key));
    this.cost = this.budget.weighted ? this.budget.costOf(this.request()) : undefined;
    // Every attempt carries the same Idempotency-Key: make it once, up front.
    if (plan.needsIdempotencyKey || plan.body.contentType !== undefined) this.readHeaders();
  }

  onAttemptStart(ctx: AttemptContext): void {
    this.attemptContext = this.trace.startAttempt(ctx, ctx.origin ?? this.origin);
  }

  onAttemptEnd(
    ctx: AttemptContext,
    outcome: AttemptOutcome,
    result: AttemptHandler | undefined,
    error: unknown,
  ): void {
    this.trace.endAttempt(ctx, outcome, { status: result?.status, error });
    if (outcome !== 'failed') return;
    // The fleet says it is overloaded: hedging backs off, and a replica that says when to come
    // back is left out of rotation until then.
    const status = result?.status;
    if (status === 429 || status === 503) {
      this.budget.penalize();
      const hold = retryAfterMs(result?.retryAfter);
      if (hold !== undefined) this.route.picker.holdBack(ctx.replica, hold);
    } else if (isConnectionRefused(error)) {
      this.budget.penalize();
    }
  }

  onHedge(outcome: HedgeOutcome): void {
    this.trace.recordHedge(outcome);
  }

  run(ctx: AttemptContext, report: AttemptReport<AttemptHandler>): void {
    const attempt = new AttemptHandler(report, this.route, ctx);
    ctx.onCancel(attempt);
    const opts = this.opts;
    const target = ctx.origin ?? this.origin;
    const headers = this.headersFor(target, ctx.replica);
    const body = (this.plan.body.next() ?? null) as Dispatcher.DispatchOptions['body'];
    const traced = this.attemptContext;
    this.attemptContext = undefined;
    if (traced === undefined) {
      const unchanged =
        target === this.origin &&
        headers === (opts.headers ?? null) &&
        body === (opts.body ?? null);
      this.dispatch(
        unchanged ? opts : { ...opts, origin: target, headers, body: body ?? null },
        attempt,
      );
      return;
    }
    // Each attempt carries its own span's trace context, and is dispatched in that context so
    // that undici instrumentation (which reads the active context) nests its spans under it.
    const carrier = toHeaderRecord(headers);
    propagation.inject(traced, carrier);
    context.with(traced, () =>
      this.dispatch({ ...opts, origin: target, headers: carrier, body: body ?? null }, attempt),
    );
  }

  judge(attempt: AttemptHandler, ctx: AttemptContext): Verdict {
    return verdict(this.route, attempt.status, ctx);
  }

  discard(attempt: AttemptHandler): void {
    attempt.cancel(loserAbortError());
  }

  /** Hands the race's outcome to the caller's handler. */
  settle(outcome: RaceOutcome<AttemptHandler>): void {
    const { handler, controller } = this;
    this.plan.body.release();
    if ('error' in outcome) {
      this.trace.end(undefined, { error: outcome.error });
      handler.onResponseError?.(controller, outcome.error as Error);
      return;
    }
    const winner = outcome.win.value;
    const ctx = outcome.win.attempt;
    const watch = new StreamWatch(
      this.route,
      this.clock,
      this.telemetry,
      this.startedAt,
      (error) => controller.abort(error),
      () => controller.paused,
    );
    try {
      watch.start();
      winner.attach(handler, controller, {
        chunk: () => watch.chunk(),
        end: (error) => {
          watch.end();
          this.trace.end(ctx, { status: winner.status, error });
        },
      });
    } catch (err) {
      watch.end();
      this.trace.end(ctx, { status: winner.status, error: err });
      // The caller's handler threw (as undici's dump or retry handlers do): stop the response
      // and report the error to it, as undici's own dispatchers would.
      winner.cancel(err);
      handler.onResponseError?.(controller, err as Error);
    }
  }

  /** What `key` and `cost` functions see of this call (made once, on first use). */
  private request(): KeyRequest {
    if (this.keyRequest === undefined) {
      const body = this.plan.body.replayable ? this.plan.body.next() : undefined;
      this.keyRequest = {
        method: this.opts.method,
        path: this.opts.path,
        headers: toHeaderRecord(this.opts.headers),
        text: () =>
          typeof body === 'string'
            ? body
            : body instanceof Uint8Array
              ? new TextDecoder().decode(body)
              : body instanceof URLSearchParams
                ? body.toString()
                : undefined,
      };
    }
    return this.keyRequest;
  }

  /** The route's conditioning key for this call; a key function that throws counts as none. */
  private keyOf(key: NonNullable<RouteSettings['key']>): string | undefined {
    try {
      const k = key(this.request());
      return typeof k === 'string' ? k : undefined;
    } catch {
      return undefined;
    }
  }

  /** The caller's headers with the idempotency key and content type the plan adds. */
  private readHeaders(): HeaderRecord {
    if (this.headers === undefined) {
      const record = toHeaderRecord(this.opts.headers);
      if (this.plan.needsIdempotencyKey && record['idempotency-key'] === undefined) {
        record['idempotency-key'] = randomUUID();
      }
      const contentType = this.plan.body.contentType;
      if (contentType !== undefined && record['content-type'] === undefined) {
        record['content-type'] = contentType;
      }
      this.headers = record;
    }
    return this.headers;
  }

  /** The headers an attempt to `target` (replica `replica`) sends: the caller's own where nothing changes. */
  private headersFor(
    target: string,
    replica: number,
  ): NonNullable<Dispatcher.DispatchOptions['headers']> | null {
    if (this.route.settings.replicaHeaderNames.length > 0) {
      return this.withReplicaHeaders(target, replica);
    }
    if (target === this.origin) return this.headers ?? this.opts.headers ?? null;
    if (this.headersElsewhere === undefined) {
      // Another origin gets its own Host header: undici sets it when none is given.
      const { host: _host, ...rest } = this.readHeaders();
      this.headersElsewhere = rest;
    }
    return this.headersElsewhere;
  }

  /**
   * Headers for a route whose replicas carry credentials of their own: every name any replica
   * sets is removed from the caller's headers, then this replica's own are added, so no attempt
   * carries another replica's credential.
   */
  private withReplicaHeaders(target: string, replica: number): HeaderRecord {
    const { replicaHeaders, replicaHeaderNames } = this.route.settings;
    const out: HeaderRecord = { ...this.readHeaders() };
    if (target !== this.origin) delete out.host;
    for (const name of replicaHeaderNames) delete out[name];
    Object.assign(out, replica >= 0 ? replicaHeaders[replica] : undefined);
    return out;
  }
}

/** True for a connection refused (undici wraps the socket error as `cause`). */
function isConnectionRefused(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; i++) {
    if (e.code === 'ECONNREFUSED') return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Builds the interceptor over a client's engine state (shared with createHedgedFetch). */
export function createInterceptor(
  hedger: Hedger,
  settings: ClientSettings,
): Dispatcher.DispatcherComposeInterceptor {
  const origins = new OriginCache();
  const telemetry = new Telemetry(hedger, settings.meterProvider, settings.tracerProvider);
  const limits: BufferLimits = {
    perCall: settings.maxBufferedBodyBytes,
    quota: new ByteQuota(settings.maxTotalBufferedBytes),
  };

  function start(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    handler: Handler,
    route: RouteState,
    origin: string,
    plan: CallPlan,
    controller: CallController,
  ): void {
    if (controller.aborted) {
      plan.body.release();
      handler.onResponseError?.(controller, controller.reason as Error);
      return;
    }
    const call = new HedgedCall(
      route,
      hedger,
      dispatch,
      opts,
      handler,
      controller,
      origin,
      plan,
      telemetry,
    );
    controller.bind(runRace(call, (outcome) => call.settle(outcome)));
  }

  return (dispatch) =>
    function hedgeDispatch(opts, handler) {
      if (opts.upgrade || opts.method === 'CONNECT' || opts.origin === undefined) {
        return dispatch(opts, handler);
      }
      const parsed = origins.get(opts.origin);
      const methodKey = opts.method.toUpperCase();
      const route = hedger.route(methodKey, {
        host: parsed.host,
        hostname: parsed.hostname,
        pathname: pathnameOf(opts.path),
      });
      if (route === undefined) return dispatch(opts, handler);
      const controller = new CallController();
      handler.onRequestStart?.(controller, {});
      try {
        const plan = planCall(route, methodKey, opts.body, limits);
        if (plan instanceof Promise) {
          plan.then(
            (p) => start(dispatch, opts, handler, route, parsed.origin, p, controller),
            (err: unknown) => handler.onResponseError?.(controller, err as Error),
          );
        } else {
          start(dispatch, opts, handler, route, parsed.origin, plan, controller);
        }
      } catch (err) {
        handler.onResponseError?.(controller, err as Error);
      }
      return true;
    };
}

/**
 * Creates an undici interceptor that hedges the requests matching its routes, with the same
 * engine, budget and options as {@link createHedgedFetch}:
 *
 * ```ts
 * const agent = new Agent().compose(hedge({ routes, budget: { ratio: 0.05 } }));
 * await request(url, { dispatcher: agent });
 * setGlobalDispatcher(agent); // undici.fetch and the global dispatcher's users hedge too
 * ```
 *
 * The caller's handler sees exactly one response, the winner's, from its start; its pause,
 * resume and abort reach the winner (abort reaches every attempt). Requests that match no route,
 * and upgrades, pass through untouched. Throws a `TailcutError` (`TAILCUT_INVALID_OPTION`)
 * naming the option and value when the configuration is invalid.
 */
export function hedge(options: HedgeInterceptorOptions): HedgeInterceptor {
  const dispatcher = (options as HedgedFetchOptions).dispatcher;
  if (dispatcher !== undefined) {
    invalid('dispatcher', dispatcher, 'absent: hedge() is composed onto a dispatcher');
  }
  const settings = validateClientOptions(options);
  const hedger = new Hedger(settings, realClock);
  return Object.assign(createInterceptor(hedger, settings), { stats: () => hedger.stats() });
}
