import type { Dispatcher } from 'undici';
import type { Hedger } from '../engine/hedger.js';
import type { BufferLimits } from './body.js';
import { CallController } from './call-controller.js';
import { HttpCall } from './http-call.js';
import { followsRedirectElsewhere, OriginCache, pathnameOf } from './origins.js';
import { type CallPlan, planCall } from './plan.js';

/**
 * The undici interceptor over a client's engine: a routed request becomes an {@link HttpCall}
 * whose caller sees one response, the winner's; everything else passes through untouched.
 */
export function createInterceptor(
  hedger: Hedger,
  limits: BufferLimits,
): Dispatcher.DispatcherComposeInterceptor {
  const origins = new OriginCache();
  return (dispatch) =>
    function hedgeDispatch(opts, handler) {
      if (opts.upgrade || opts.method === 'CONNECT' || opts.origin === undefined) {
        return dispatch(opts, handler);
      }
      const parsed = origins.get(opts.origin);
      const method = opts.method.toUpperCase();
      const route = hedger.route(method, {
        host: parsed.host,
        hostname: parsed.hostname,
        pathname: pathnameOf(opts.path),
      });
      if (route === undefined || followsRedirectElsewhere(handler, parsed.origin)) {
        return dispatch(opts, handler);
      }
      const controller = new CallController();
      handler.onRequestStart?.(controller, {});
      const start = (plan: CallPlan) => {
        if (controller.aborted) {
          plan.body.release();
          handler.onResponseError?.(controller, controller.reason as Error);
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
        ).start();
      };
      try {
        const plan = planCall(route, method, opts.body, limits);
        if (plan instanceof Promise) {
          plan.then(start, (err: unknown) => handler.onResponseError?.(controller, err as Error));
        } else {
          start(plan);
        }
      } catch (err) {
        handler.onResponseError?.(controller, err as Error);
      }
      return true;
    };
}
