import type { AttemptContext, Verdict } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { type BufferLimits, type PreparedBody, prepareBody } from './body.js';

/** Methods hedged without `idempotent: true`. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** How one routed call will be sent: its body, its attempt limit, its idempotency key rule. */
export interface CallPlan {
  body: PreparedBody;
  /** 1 when the call may not be sent twice (method not idempotent, or body not replayable). */
  maxAttempts: number;
  /** True when every attempt must carry one Idempotency-Key (non-safe method, idempotent route). */
  needsIdempotencyKey: boolean;
}

/**
 * Decides how a routed call is sent: synchronously for in-memory bodies, after buffering for
 * streams.
 */
export function planCall(
  route: RouteState,
  methodKey: string,
  body: unknown,
  limits: BufferLimits,
): CallPlan | Promise<CallPlan> {
  const { maxAttempts, idempotent } = route.settings;
  const safe = SAFE_METHODS.has(methodKey);
  const hedgeable = maxAttempts > 1 && (safe || idempotent);
  const plan = (prepared: PreparedBody): CallPlan => ({
    body: prepared,
    maxAttempts: hedgeable && prepared.replayable ? maxAttempts : 1,
    needsIdempotencyKey: !safe && idempotent,
  });
  const prepared = prepareBody(body, hedgeable, limits);
  return prepared instanceof Promise ? prepared.then(plan) : plan(prepared);
}

/** Judges a response status at the commit point. */
export function verdict(route: RouteState, status: number, ctx: AttemptContext): Verdict {
  if (route.settings.retryOn.has(status)) return 'retry';
  // The primary may still hold the idempotency key: a hedge's conflict is not an answer.
  if (status === 409 && ctx.kind === 'hedge') return 'fail';
  return 'accept';
}
