import type { Dispatcher } from 'undici';
import type { Hedger } from '../engine/hedger.js';
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
      const start = (plan: CallPlan) => {
        controller.onEarlyAbort = undefined;
        if (controller.aborted) {
          // The caller aborted while the body was buffered, and was told then.
          plan.body.release();
          return;
        }
        new HttpCall(
          hedger,
          route,
          parsed.origin,
          dispatch,
          opts,
          handler,
          controller,
          plan,
          keys,
        ).start();
      };
      try {
        const plan = planCall(route, method, opts.path, opts.body, limits, controller);
        if (plan instanceof Promise) {
          controller.onEarlyAbort = () =>
            handler.onResponseError?.(controller, controller.reason as Error);
          plan.then(start, (err: unknown) => {
            if (controller.aborted) return;
            controller.onEarlyAbort = undefined;
            handler.onResponseError?.(controller, err as Error);
          });
        } else {
          start(plan);
        }
      } catch (err) {
        handler.onResponseError?.(controller, err as Error);
      }
      return true;
    };
  };
}
