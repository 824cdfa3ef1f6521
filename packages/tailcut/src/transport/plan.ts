import { sendRule } from '../engine/policy.js';
import type { RouteState } from '../engine/route-state.js';
import { type BufferLimits, type PreparedBody, prepareBody } from './body.js';
import { type CallShapes, shapeCall } from './shapes.js';

/** How one routed call will be sent: its body, its shapes, its attempt limit, its key rule. */
export class CallPlan {
  constructor(
    readonly body: PreparedBody,
    /** The request as each replica wants it, when some replica reshapes requests. */
    readonly shapes: CallShapes | undefined,
    /** 1 when the call may not be sent twice (method not idempotent, or body not replayable). */
    readonly maxAttempts: number,
    /** True when every attempt must carry one Idempotency-Key (non-safe method, idempotent route). */
    readonly needsIdempotencyKey: boolean,
  ) {}
}

/**
 * Decides how a routed call is sent, by the engine's rule for its method: synchronously for
 * in-memory bodies, after buffering for streams. A route that rewrites JSON bodies buffers the
 * body (within the caps) even for a call sent once. Throws (or rejects with)
 * `TAILCUT_REWRITE_FAILED` when a replica's rewrite cannot be applied: nothing is sent.
 */
export function planCall(
  route: RouteState,
  method: string,
  target: string,
  body: unknown,
  limits: BufferLimits,
  caller: { readonly signal: AbortSignal },
): CallPlan | Promise<CallPlan> {
  const { hedgeable, needsIdempotencyKey } = sendRule(route, method);
  const plan = (prepared: PreparedBody, shapes: CallShapes | undefined): CallPlan =>
    new CallPlan(
      prepared,
      shapes,
      hedgeable && prepared.replayable && shapes?.replayable !== false
        ? route.settings.maxAttempts
        : 1,
      needsIdempotencyKey,
    );
  const shape = (prepared: PreparedBody): CallPlan | Promise<CallPlan> => {
    let shapes: CallShapes | Promise<CallShapes> | undefined;
    try {
      shapes = shapeCall(route.settings, target, prepared, limits);
    } catch (err) {
      prepared.release();
      throw err;
    }
    if (!(shapes instanceof Promise)) return plan(prepared, shapes);
    return shapes.then(
      (s) => plan(prepared, s),
      (err: unknown) => {
        prepared.release();
        throw err;
      },
    );
  };
  const buffer = hedgeable || route.settings.rewritesJson;
  const prepared = prepareBody(body, buffer, limits, caller);
  return prepared instanceof Promise ? prepared.then(shape) : shape(prepared);
}
