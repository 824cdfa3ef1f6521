import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { realClock } from '../clock.js';
import { invalid } from '../config/checks.js';
import type { HedgedFetchOptions } from '../config/options.js';
import { validateClientOptions } from '../config/validate.js';
import { Hedger, type HedgeStats } from '../engine/hedger.js';
import { type AttemptContext, type RaceWin, race } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { loserAbortError } from '../errors.js';
import type { BufferLimits } from './body.js';
import { ByteQuota } from './byte-quota.js';
import { type HeaderRecord, toHeaderRecord } from './dispatch-headers.js';
import { type CallPlan, planCall, verdict } from './plan.js';

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
 * The controller the caller's handler gets. Before commit, abort cancels the whole race; after,
 * pause, resume and abort go to the winning attempt's controller.
 */
class CallController implements Controller {
  readonly #race = new AbortController();
  #winner: Controller | undefined;
  #paused = false;
  #reason: Error | null = null;
  /** Runs when the caller resumes: flushes what the winner buffered before it was attached. */
  onResume: (() => void) | undefined;

  /** Aborted when the caller aborts: the race's signal. */
  get signal(): AbortSignal {
    return this.#race.signal;
  }
  get aborted(): boolean {
    return this.#race.signal.aborted;
  }
  get paused(): boolean {
    return this.#paused;
  }
  get reason(): Error | null {
    return this.#reason;
  }
  get rawHeaders() {
    return this.#winner?.rawHeaders ?? null;
  }
  get rawTrailers() {
    return this.#winner?.rawTrailers ?? null;
  }

  attach(winner: Controller): void {
    this.#winner = winner;
  }

  abort(reason: Error): void {
    if (this.aborted) return;
    this.#reason = reason;
    this.#race.abort(reason);
    this.#winner?.abort(reason);
  }

  pause(): void {
    this.#paused = true;
    this.#winner?.pause();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    if (this.onResume) this.onResume();
    else this.#winner?.resume();
  }
}

/**
 * The handler of one attempt. It settles `committed` at the commit point (response start, or
 * first body chunk), holds what arrives until the race decides, then either hands everything
 * to the caller's handler (`attach`) or is aborted (`drop`).
 */
class AttemptHandler implements Handler {
  readonly committed: Promise<AttemptHandler>;
  status = 0;
  #resolve!: (value: AttemptHandler) => void;
  #reject!: (err: unknown) => void;
  #state: 'waiting' | 'held' | 'attached' | 'dropped' = 'waiting';
  #controller: Controller | undefined;
  #headers: Headers = {};
  #statusMessage: string | undefined;
  #chunks: Buffer[] = [];
  #end: { trailers: Headers } | { error: Error } | undefined;
  #caller: { handler: Handler; controller: CallController } | undefined;
  readonly #firstByte: boolean;
  readonly #signal: AbortSignal;
  readonly #acceptable: (status: number) => boolean;

  constructor(signal: AbortSignal, firstByte: boolean, acceptable: (status: number) => boolean) {
    this.#signal = signal;
    this.#firstByte = firstByte;
    this.#acceptable = acceptable;
    this.committed = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    signal.addEventListener('abort', () => this.#controller?.abort(signal.reason), { once: true });
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    if (this.#signal.aborted) controller.abort(this.#signal.reason);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Headers,
    statusMessage?: string,
  ): void {
    if (statusCode < 200) return; // 1xx informational: not the answer
    this.#controller = controller;
    this.status = statusCode;
    this.#headers = headers;
    this.#statusMessage = statusMessage;
    if (!this.#firstByte || !this.#acceptable(statusCode)) this.#commit();
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    const caller = this.#caller;
    if (this.#state === 'attached' && caller !== undefined && this.#chunks.length === 0) {
      caller.handler.onResponseData?.(caller.controller, chunk);
      return;
    }
    if (this.#state === 'dropped') return;
    this.#chunks.push(chunk);
    controller.pause();
    if (this.#state === 'waiting') this.#commit();
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    this.#finish({ trailers });
  }

  onResponseError(_controller: Controller, error: Error): void {
    if (this.#state === 'waiting') {
      this.#state = 'dropped';
      this.#reject(error);
      return;
    }
    this.#finish({ error });
  }

  /** Hands the response, from its start, to the caller's handler. */
  attach(handler: Handler, controller: CallController): void {
    if (this.#controller === undefined) return;
    this.#state = 'attached';
    this.#caller = { handler, controller };
    controller.attach(this.#controller);
    controller.onResume = () => this.#flush();
    handler.onResponseStart?.(controller, this.status, this.#headers, this.#statusMessage);
    this.#flush();
  }

  /** Aborts an attempt whose result will not be used. */
  drop(): void {
    this.#state = 'dropped';
    this.#chunks = [];
    this.#controller?.abort(loserAbortError());
  }

  #commit(): void {
    this.#state = 'held';
    this.#resolve(this);
  }

  #finish(end: { trailers: Headers } | { error: Error }): void {
    if (this.#state === 'dropped') return;
    if (this.#state === 'waiting' && 'trailers' in end) {
      // An empty body ends the response: that is its commit point too.
      this.#end = end;
      this.#commit();
      return;
    }
    this.#end = end;
    if (this.#state === 'attached') this.#flush();
  }

  /** Delivers held chunks and the end to the caller, as far as the caller is not paused. */
  #flush(): void {
    const caller = this.#caller;
    if (caller === undefined) return;
    const { handler, controller } = caller;
    while (this.#chunks.length > 0) {
      if (controller.paused || controller.aborted) return;
      handler.onResponseData?.(controller, this.#chunks.shift() as Buffer);
    }
    const end = this.#end;
    if (end !== undefined) {
      // The caller stays attached: if its onResponseEnd throws (undici's retry handler does,
      // to ask for a retry), undici reports that error here and it is forwarded too.
      this.#end = undefined;
      if ('trailers' in end) handler.onResponseEnd?.(controller, end.trailers);
      else handler.onResponseError?.(controller, end.error);
      return;
    }
    controller.onResume = undefined;
    if (!controller.paused) this.#controller?.resume();
  }
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
 * and upgrades, pass through untouched.
 */
export function hedge(options: HedgeInterceptorOptions): HedgeInterceptor {
  if ((options as HedgedFetchOptions).dispatcher !== undefined) {
    invalid(
      'dispatcher',
      (options as HedgedFetchOptions).dispatcher,
      'absent: hedge() is composed onto a dispatcher',
    );
  }
  const settings = validateClientOptions(options);
  const hedger = new Hedger(settings, realClock);
  const limits: BufferLimits = {
    perCall: settings.maxBufferedBodyBytes,
    quota: new ByteQuota(settings.maxTotalBufferedBytes),
  };

  async function hedged(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    handler: Handler,
    route: RouteState,
    plan: CallPlan,
    controller: CallController,
  ): Promise<void> {
    const origin = new URL(String(opts.origin)).origin;
    const headers = toHeaderRecord(opts.headers);
    if (plan.needsIdempotencyKey && headers['idempotency-key'] === undefined) {
      headers['idempotency-key'] = randomUUID();
    }
    if (plan.body.contentType !== undefined && headers['content-type'] === undefined) {
      headers['content-type'] = plan.body.contentType;
    }
    // Another origin must get its own Host header: undici sets it when none is given.
    const { host: _host, ...elsewhere } = headers;
    const firstByte = route.settings.commitOn === 'first-byte';
    let win: RaceWin<AttemptHandler>;
    try {
      win = await race<AttemptHandler>({
        route,
        budget: hedger.budget,
        clock: hedger.clock,
        signal: controller.signal,
        maxAttempts: plan.maxAttempts,
        run(ctx: AttemptContext) {
          const attempt = new AttemptHandler(
            ctx.signal,
            firstByte,
            (status) => verdict(route, status, ctx) === 'accept',
          );
          const target = ctx.origin ?? origin;
          dispatch(
            {
              ...opts,
              origin: target,
              headers: (target === origin ? headers : elsewhere) as HeaderRecord,
              body: (plan.body.next() ?? null) as NonNullable<
                Dispatcher.DispatchOptions['body']
              > | null,
            },
            attempt,
          );
          return attempt.committed;
        },
        judge: (attempt, ctx) => verdict(route, attempt.status, ctx),
        discard: (attempt) => attempt.drop(),
      });
    } catch (err) {
      handler.onResponseError?.(controller, err as Error);
      return;
    } finally {
      plan.body.release();
    }
    try {
      win.value.attach(handler, controller);
    } catch (err) {
      // The caller's handler threw (as undici's dump or retry handlers do): stop the response
      // and report the error to it, as undici's own dispatchers would.
      win.value.drop();
      handler.onResponseError?.(controller, err as Error);
    }
  }

  const interceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) =>
    function hedgeDispatch(opts, handler) {
      if (opts.upgrade || opts.method === 'CONNECT' || opts.origin === undefined) {
        return dispatch(opts, handler);
      }
      const url = new URL(opts.path, opts.origin);
      const methodKey = opts.method.toUpperCase();
      const route = hedger.route(methodKey, url);
      if (route === undefined) return dispatch(opts, handler);
      const controller = new CallController();
      handler.onRequestStart?.(controller, {});
      planCall(route, methodKey, opts.body, limits).then(
        (plan) => hedged(dispatch, opts, handler, route, plan, controller),
        (err: unknown) => handler.onResponseError?.(controller, err as Error),
      );
      return true;
    };
  return Object.assign(interceptor, { stats: () => hedger.stats() });
}
