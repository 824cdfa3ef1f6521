import type { Dispatcher } from 'undici';
import type { Hedger } from '../engine/hedger.js';
import type { RouteState } from '../engine/route-state.js';
import type { BufferLimits } from './body.js';
import { CallController } from './call-controller.js';
import { HttpCall, IdempotencyKeys } from './http-call.js';
import { currentHandler } from './legacy-handler.js';
import { OriginCache, pathnameOf } from './origins.js';
import { type CallPlan, planCall } from './plan.js';
import type { ConnectionWarmer } from './warm.js';

/**
 * The undici interceptor over a client's engine: a routed request becomes an {@link HttpCall}
 * whose caller sees one response, the winner's; everything else passes through untouched. With a
 * `warmer`, each dispatcher it is composed onto keeps its replica connections open.
 */
export function createInterceptor(
  hedger: Hedger,
  limits: BufferLimits,
  warmer?: ConnectionWarmer,
): Dispatcher.DispatcherComposeInterceptor {
  const origins = new OriginCache();
  const keys = new IdempotencyKeys();
  return (dispatch) => {
    warmer?.start(dispatch);
    return function hedgeDispatch(opts, callerHandler) {
      const handler = currentHandler(callerHandler);
      if (opts.upgrade || opts.method === 'CONNECT' || opts.origin === undefined) {
        return dispatch(opts, handler);
      }
      const parsed = origins.get(opts.origin);
      const method = opts.method.toUpperCase();
      const route = hedger.route(method, {
        origin: parsed.origin,
        host: parsed.host,
        hostname: parsed.hostname,
        pathname: pathnameOf(opts.path),
      });
      if (route === undefined) return dispatch(opts, handler);
      const controller = new CallController();
      handler.onRequestStart?.(controller, {});
      try {
        const plan = planCall(route, method, opts.path, opts.body, limits, controller);
        const call = new CallStart(
          hedger,
          route,
          parsed.origin,
          dispatch,
          opts,
          handler,
          controller,
          keys,
        );
        if (plan instanceof Promise) call.whenBuffered(plan);
        else call.run(plan);
      } catch (err) {
        handler.onResponseError?.(controller, err as Error);
      }
      return true;
    };
  };
}

/**
 * What a routed call needs to start once its plan is ready: at once for in-memory bodies, after
 * buffering for streams. (A class, not closures in the dispatch function: no context object is
 * made for the calls that need none.)
 */
class CallStart {
  constructor(
    private readonly hedger: Hedger,
    private readonly route: RouteState,
    private readonly origin: string,
    private readonly dispatch: Dispatcher.Dispatch,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly handler: Dispatcher.DispatchHandler,
    private readonly controller: CallController,
    private readonly keys: IdempotencyKeys,
  ) {}

  run(plan: CallPlan): void {
    const controller = this.controller;
    controller.onEarlyAbort = undefined;
    if (controller.aborted) {
      // The caller aborted while the body was buffered, and was told then.
      plan.body.release();
      return;
    }
    new HttpCall(
      this.hedger,
      this.route,
      this.origin,
      this.dispatch,
      this.opts,
      this.handler,
      controller,
      plan,
      this.keys,
    ).start();
  }

  /** Starts the call when its body is buffered; the caller hears of an abort at once. */
  whenBuffered(plan: Promise<CallPlan>): void {
    const { handler, controller } = this;
    controller.onEarlyAbort = () =>
      handler.onResponseError?.(controller, controller.reason as Error);
    plan.then(
      (p) => this.run(p),
      (err: unknown) => {
        if (controller.aborted) return;
        controller.onEarlyAbort = undefined;
        handler.onResponseError?.(controller, err as Error);
      },
    );
  }
}
