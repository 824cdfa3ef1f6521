import { sendRule } from '../engine/policy.js';
import type { RouteState } from '../engine/route-state.js';
import { type BufferLimits, type PreparedBody, prepareBody } from './body.js';

/** How one routed call will be sent: its body, its attempt limit, its idempotency key rule. */
export interface CallPlan {
  body: PreparedBody;
  /** 1 when the call may not be sent twice (method not idempotent, or body not replayable). */
  maxAttempts: number;
  /** True when every attempt must carry one Idempotency-Key (non-safe method, idempotent route). */
  needsIdempotencyKey: boolean;
}

/**
 * Decides how a routed call is sent, by the engine's rule for its method: synchronously for
 * in-memory bodies, after buffering for streams.
 */
export function planCall(
  route: RouteState,
  method: string,
  body: unknown,
  limits: BufferLimits,
  caller: { readonly signal: AbortSignal },
): CallPlan | Promise<CallPlan> {
  const { hedgeable, needsIdempotencyKey } = sendRule(route, method);
  const plan = (prepared: PreparedBody): CallPlan => ({
    body: prepared,
    maxAttempts: hedgeable && prepared.replayable ? route.settings.maxAttempts : 1,
    needsIdempotencyKey,
  });
  const prepared = prepareBody(body, hedgeable, limits, caller);
  return prepared instanceof Promise ? prepared.then(plan) : plan(prepared);
}
