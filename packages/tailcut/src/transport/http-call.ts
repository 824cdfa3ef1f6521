import { randomUUID } from 'node:crypto';
import { type Context, context, propagation } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { Call, CallSpec } from '../engine/call.js';
import type { Hedger } from '../engine/hedger.js';
import type { AttemptContext, AttemptReport, RaceOutcome } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { loserAbortError } from '../errors.js';
import type { KeyRequest } from '../request-view.js';
import { AttemptHandler, type Delivery } from './attempt-handler.js';
import type { CallController } from './call-controller.js';
import { attemptHeaders, callHeaders, keyRequest } from './compose.js';
import { type HeaderRecord, toHeaderRecord } from './dispatch-headers.js';
import type { CallPlan } from './plan.js';

type Handler = Dispatcher.DispatchHandler;

/**
 * The Idempotency-Key of each caller's request, by its dispatch handler: a handler that
 * dispatches again (undici's retry or redirect interceptor outside tailcut) sends the same key,
 * so a server that de-duplicates by key sees one request, however often it is retried.
 */
export class IdempotencyKeys {
  private readonly keys = new WeakMap<object, string>();

  for(handler: object): string {
    let key = this.keys.get(handler);
    if (key === undefined) {
      key = randomUUID();
      this.keys.set(handler, key);
    }
    return key;
  }
}
type DispatchHeaders = NonNullable<Dispatcher.DispatchOptions['headers']>;

/**
 * One routed call through the interceptor: how its attempts are dispatched (the engine's
 * {@link CallSpec}), and how the race's outcome reaches the caller's handler.
 */
export class HttpCall implements CallSpec<AttemptHandler>, Delivery {
  readonly method: string;
  readonly maxAttempts: number;
  readonly primaryAmong: ((replica: number) => boolean) | undefined;
  private readonly call: Call<AttemptHandler>;
  /** The caller's headers with the call's additions, made once when needed. */
  private headers: HeaderRecord | undefined;
  /** The same, for an attempt to another origin (no Host), made once when needed. */
  private headersElsewhere: HeaderRecord | undefined;
  private keyView: KeyRequest | undefined;
  /** The attempt whose answer the caller gets, once the race is decided. */
  private winner: AttemptHandler | undefined;
  private winnerCtx: AttemptContext | undefined;

  constructor(
    hedger: Hedger,
    readonly route: RouteState,
    readonly origin: string,
    private readonly dispatch: Dispatcher.Dispatch,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly handler: Handler,
    private readonly controller: CallController,
    private readonly plan: CallPlan,
    private readonly keys: IdempotencyKeys,
  ) {
    this.method = opts.method.toUpperCase();
    this.maxAttempts = plan.maxAttempts;
    this.primaryAmong = plan.shapes?.primaryAmong;
    this.call = hedger.call(this);
  }

  /** Races the attempts; the caller's handler gets the outcome. */
  start(): void {
    this.controller.bind(this.call.start((outcome) => this.settle(outcome)));
  }

  request(): KeyRequest {
    if (this.keyView === undefined) {
      const body = this.plan.body.replayable ? this.plan.body.next() : undefined;
      this.keyView = keyRequest(this.opts, body);
    }
    return this.keyView;
  }

  run(ctx: AttemptContext, report: AttemptReport<AttemptHandler>, trace: unknown): void {
    const attempt = new AttemptHandler(report, this.route, ctx.kind, this.method === 'HEAD');
    ctx.onCancel(attempt);
    const opts = this.opts;
    const target = ctx.origin ?? this.origin;
    const shapes = this.plan.shapes;
    const rewritten = shapes?.body(ctx.replica);
    const headers = this.headersFor(target, ctx.replica, rewritten !== undefined);
    const body = (rewritten ?? this.plan.body.next() ?? null) as Dispatcher.DispatchOptions['body'];
    const path = shapes === undefined ? opts.path : shapes.path(ctx.replica);
    // An attempt that carries a replica's credentials or shape follows no redirect below
    // tailcut (an inner redirect interceptor would send them to the Location's origin): the 3xx
    // goes to the caller, and whatever follows it outside tailcut sends the caller's own headers.
    const { credentialNames, reshapes, origins } = this.route.settings;
    const own = credentialNames.length > 0 || reshapes;
    attempt.dropLocation = own && target !== this.origin;
    if (origins.length > 1) {
      attempt.siblings = origins;
      attempt.siblingBase = target;
    }
    if (trace === undefined) {
      const unchanged =
        target === this.origin &&
        headers === (opts.headers ?? null) &&
        body === (opts.body ?? null) &&
        !own;
      this.dispatch(
        unchanged ? opts : withAttempt(opts, { origin: target, path, headers, body }, own),
        attempt,
      );
      return;
    }
    // Each attempt carries its own span's trace context, and is dispatched in that context so
    // that undici instrumentation (which reads the active context) nests its spans under it.
    const carrier = toHeaderRecord(headers);
    propagation.inject(trace as Context, carrier);
    context.with(trace as Context, () =>
      this.dispatch(
        withAttempt(opts, { origin: target, path, headers: carrier, body }, own),
        attempt,
      ),
    );
  }

  discard(attempt: AttemptHandler): void {
    attempt.cancel(loserAbortError());
  }

  /** Hands the race's outcome to the caller's handler. */
  private settle(outcome: RaceOutcome<AttemptHandler>): void {
    const { handler, controller, call } = this;
    this.plan.body.release();
    this.plan.shapes?.release();
    if ('error' in outcome) {
      call.end(undefined, { error: outcome.error });
      handler.onResponseError?.(controller, outcome.error as Error);
      return;
    }
    const winner = outcome.win.value;
    const ctx = outcome.win.attempt;
    this.winner = winner;
    this.winnerCtx = ctx;
    try {
      call.bodyStarted(
        (error) => controller.abort(error),
        () => controller.paused,
      );
      winner.attach(handler, controller, this);
    } catch (err) {
      call.end(ctx, { status: winner.status, error: err });
      // The caller's handler threw (as undici's dump or retry handlers do): stop the response
      // and report the error to it, as undici's own dispatchers would.
      winner.cancel(err);
      handler.onResponseError?.(controller, err as Error);
    }
  }

  get countsTokens(): boolean {
    return this.call.countsTokens;
  }

  chunk(): void {
    this.call.chunk();
  }

  tokens(count: number): void {
    this.call.tokens(count);
  }

  end(error: unknown): void {
    this.call.end(this.winnerCtx, { status: this.winner?.status, error });
  }

  /** The call's headers: the caller's, plus the Idempotency-Key and content type it adds. */
  private callHeaders(): HeaderRecord {
    if (this.headers === undefined) {
      this.headers = callHeaders(this.opts.headers, {
        idempotencyKey: this.plan.needsIdempotencyKey ? this.keys.for(this.handler) : undefined,
        contentType: this.plan.body.contentType,
      });
    }
    return this.headers;
  }

  /**
   * The headers of an attempt to `target` (replica `replica`): the caller's own where nothing
   * changes. On a route where some replica has headers, the caller's credentials go only to the
   * replica the request was sent to, and only if it has no headers of its own.
   */
  private headersFor(
    target: string,
    replica: number,
    bodyRewritten: boolean,
  ): DispatchHeaders | null {
    const { replicas, credentialNames } = this.route.settings;
    const same = target === this.origin;
    const own = replica >= 0 ? replicas[replica]?.headers : undefined;
    if (credentialNames.length > 0 || bodyRewritten) {
      const keeps = same && own === undefined;
      const strip = keeps ? [] : credentialNames;
      return attemptHeaders(this.callHeaders(), same, strip, own, bodyRewritten);
    }
    const adds = this.plan.needsIdempotencyKey || this.plan.body.contentType !== undefined;
    if (same) return adds ? this.callHeaders() : (this.opts.headers ?? null);
    this.headersElsewhere ??= attemptHeaders(this.callHeaders(), false, [], undefined);
    return this.headersElsewhere;
  }
}

/** What an attempt changes of the caller's request. */
interface AttemptTarget {
  origin: string;
  path: string;
  headers: DispatchHeaders | null;
  body: Dispatcher.DispatchOptions['body'];
}

/** The dispatch options of one attempt. */
function withAttempt(
  opts: Dispatcher.DispatchOptions,
  to: AttemptTarget,
  noRedirects: boolean,
): Dispatcher.DispatchOptions {
  const out: Dispatcher.DispatchOptions & { maxRedirections?: number } = {
    ...opts,
    origin: to.origin,
    path: to.path,
    headers: to.headers,
    body: to.body ?? null,
  };
  if (noRedirects) out.maxRedirections = 0;
  return out;
}
