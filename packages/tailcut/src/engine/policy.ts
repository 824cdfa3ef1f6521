import type { BudgetPort } from '../budget/port.js';
import { retryAfterMs } from '../replicas/picker.js';
import type { AttemptKind, Verdict } from './race.js';
import type { RouteState } from './route-state.js';

/**
 * HTTP policy, the same for every transport and for the simulator: which methods may be sent
 * twice, how a status is judged, and how the fleet's overload signals steer hedging.
 */

/** Methods hedged without `idempotent: true`. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the engine needs to know of an attempt's answer. */
export interface Answer {
  readonly status: number;
  /** The answer's Retry-After header, if any. */
  readonly retryAfter?: string | string[] | undefined;
  /** True when a streamed answer failed before its first output (an error event, or none). */
  readonly streamFailed?: boolean;
}

/** How a call of `method` (upper case) on `route` may be sent. */
export interface SendRule {
  /** True when the call may be sent more than once (body permitting). */
  hedgeable: boolean;
  /** True when every attempt must carry one Idempotency-Key (non-safe method, idempotent route). */
  needsIdempotencyKey: boolean;
}

/** GET, HEAD and OPTIONS are hedged; other methods only on an `idempotent` route, with a key. */
export function sendRule(route: RouteState, method: string): SendRule {
  const safe = SAFE_METHODS.has(method);
  const { maxAttempts, idempotent } = route.settings;
  return {
    hedgeable: maxAttempts > 1 && (safe || idempotent),
    needsIdempotencyKey: !safe && idempotent,
  };
}

/** Judges an answer at the commit point. */
export function verdict(route: RouteState, answer: Answer, kind: AttemptKind): Verdict {
  const status = answer.status;
  if (route.settings.retryOn.has(status) || answer.streamFailed === true) return 'retry';
  // The primary may still hold the idempotency key: a hedge's conflict is not an answer.
  if (status === 409 && kind === 'hedge') return 'fail';
  return 'accept';
}

/**
 * Reacts to a failed attempt that says the fleet is overloaded: a 429 or 503 (or a refused
 * connection) withdraws a token, so hedging backs off while the fleet says so, and a replica
 * that says when to come back (Retry-After) is left out of rotation until then.
 */
export function onOverload(
  route: RouteState,
  budget: BudgetPort,
  replica: number,
  answer: Answer | undefined,
  error: unknown,
): void {
  const status = answer?.status;
  if (status === 429 || status === 503) {
    budget.penalize();
    const hold = retryAfterMs(answer?.retryAfter);
    if (hold !== undefined) route.picker.holdBack(replica, hold);
  } else if (answer === undefined && isConnectionRefused(error)) {
    budget.penalize();
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
