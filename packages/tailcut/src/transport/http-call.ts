import { randomUUID } from 'node:crypto';
import { type Context, context, propagation } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { Call, CallSpec } from '../engine/call.js';
import type { Hedger } from '../engine/hedger.js';
import type { AttemptContext, AttemptReport, RaceOutcome } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { loserAbortError } from '../errors.js';
import type { KeyRequest } from '../request-view.js';
import { AttemptHandler } from './attempt-handler.js';
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
export class HttpCall implements CallSpec<AttemptHandler> {
  readonly method: string;
  readonly maxAttempts: number;
  private readonly call: Call<AttemptHandler>;
  /** The caller's headers with the call's additions, made once when needed. */
  private headers: HeaderRecord | undefined;
  /** The same, for an attempt to another origin (no Host), made once when needed. */
  private headersElsewhere: HeaderRecord | undefined;
  private keyView: KeyRequest | undefined;

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
    const attempt = new AttemptHandler(report, this.route, ctx);
    ctx.onCancel(attempt);
    const opts = this.opts;
    const target = ctx.origin ?? this.origin;
    const headers = this.headersFor(target, ctx.replica);
    const body = (this.plan.body.next() ?? null) as Dispatcher.DispatchOptions['body'];
    // An attempt that carries a replica's credentials follows no redirect below tailcut (an
    // inner redirect interceptor would send them to the Location's origin): the 3xx goes to the
    // caller, and whatever follows it outside tailcut sends the caller's own headers.
    const credentialed = this.route.settings.replicaHeaderNames.length > 0;
    if (trace === undefined) {
      const unchanged =
        target === this.origin &&
        headers === (opts.headers ?? null) &&
        body === (opts.body ?? null) &&
        !credentialed;
      this.dispatch(
        unchanged ? opts : withAttempt(opts, target, headers, body, credentialed),
        attempt,
      );
      return;
    }
    // Each attempt carries its own span's trace context, and is dispatched in that context so
    // that undici instrumentation (which reads the active context) nests its spans under it.
    const carrier = toHeaderRecord(headers);
    propagation.inject(trace as Context, carrier);
    context.with(trace as Context, () =>
      this.dispatch(withAttempt(opts, target, carrier, body, credentialed), attempt),
    );
  }

  discard(attempt: AttemptHandler): void {
    attempt.cancel(loserAbortError());
  }

  /** Hands the race's outcome to the caller's handler. */
  private settle(outcome: RaceOutcome<AttemptHandler>): void {
    const { handler, controller, call } = this;
    this.plan.body.release();
    if ('error' in outcome) {
      call.end(undefined, { error: outcome.error });
      handler.onResponseError?.(controller, outcome.error as Error);
      return;
    }
    const winner = outcome.win.value;
    const ctx = outcome.win.attempt;
    try {
      call.bodyStarted(
        (error) => controller.abort(error),
        () => controller.paused,
      );
      winner.attach(handler, controller, {
        chunk: () => call.chunk(),
        tokens: (count) => call.tokens(count),
        end: (error) => call.end(ctx, { status: winner.status, error }),
      });
    } catch (err) {
      call.end(ctx, { status: winner.status, error: err });
      // The caller's handler threw (as undici's dump or retry handlers do): stop the response
      // and report the error to it, as undici's own dispatchers would.
      winner.cancel(err);
      handler.onResponseError?.(controller, err as Error);
    }
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

  /** The headers of an attempt to `target` (replica `replica`): the caller's own where nothing changes. */
  private headersFor(target: string, replica: number): DispatchHeaders | null {
    const { replicaHeaders, replicaHeaderNames } = this.route.settings;
    const same = target === this.origin;
    if (replicaHeaderNames.length > 0) {
      const own = replica >= 0 ? replicaHeaders[replica] : undefined;
      return attemptHeaders(this.callHeaders(), same, replicaHeaderNames, own);
    }
    const adds = this.plan.needsIdempotencyKey || this.plan.body.contentType !== undefined;
    if (same) return adds ? this.callHeaders() : (this.opts.headers ?? null);
    this.headersElsewhere ??= attemptHeaders(this.callHeaders(), false, [], undefined);
    return this.headersElsewhere;
  }
}

/** The dispatch options of one attempt. */
function withAttempt(
  opts: Dispatcher.DispatchOptions,
  origin: string,
  headers: DispatchHeaders | null,
  body: Dispatcher.DispatchOptions['body'],
  noRedirects: boolean,
): Dispatcher.DispatchOptions {
  const out: Dispatcher.DispatchOptions & { maxRedirections?: number } = {
    ...opts,
    origin,
    headers,
    body: body ?? null,
  };
  if (noRedirects) out.maxRedirections = 0;
  return out;
}
