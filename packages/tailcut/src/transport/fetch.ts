import * as undici from 'undici';
import { createClient } from '../client.js';
import type { HedgedFetchOptions } from '../config/options.js';
import type { HedgeStats } from '../engine/hedger.js';
import { isTailcutError, TailcutError } from '../errors.js';
import { toUndiciCall, type UndiciCall } from './request.js';
import { linkSignal } from './signal.js';

/** A fetch function with hedging, plus its stats and a way to release its resources. */
export interface HedgedFetch {
  /** Same signature and behaviour as WHATWG fetch; matched routes are hedged. */
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Per-route delay, window size and counters, and the budget's balance. */
  stats(): HedgeStats;
  /**
   * Rejects further calls (`TAILCUT_CLOSED`), waits for the calls in flight to be answered,
   * then closes the dispatcher this client created (not one passed in), which lets their
   * bodies finish.
   */
  close(): Promise<void>;
}

/**
 * Rethrows fetch's error, or the `TAILCUT_REWRITE_FAILED` error it wraps ("fetch failed" says
 * nothing of a replica's rewrite that could not be applied).
 */
function ownError(err: unknown): never {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  throw isTailcutError(cause, 'TAILCUT_REWRITE_FAILED') ? cause : err;
}

/**
 * Creates a fetch function that hedges the requests matching its routes: when an attempt runs
 * past the route's recent percentile latency, a backup goes to another replica, the first
 * acceptable answer wins and the others are aborted, under a budget shared by all routes.
 * Requests that match no route pass through unchanged.
 *
 * It is `undici.fetch` over a dispatcher composed with tailcut's interceptor (the same engine
 * as {@link hedge}), so fetch keeps its own semantics (redirects, the caller's signal, body
 * streaming) and hedging costs little more than the dispatch itself.
 *
 * Throws a {@link TailcutError} with code `TAILCUT_INVALID_OPTION` naming the option and value
 * when the configuration is invalid.
 */
export function createHedgedFetch(options: HedgedFetchOptions): HedgedFetch {
  const { settings, hedger, interceptor, warmer } = createClient(options);
  // An undici 8 dispatcher works too (its shape is undici 7's, less the legacy handler API,
  // which the interceptor adapts): typed as undici 7's, the fetch it is handed to.
  const base = (settings.dispatcher as undici.Dispatcher | undefined) ?? new undici.Agent();
  const hedged = base.compose(interceptor);
  // A dispatcher passed per call (init.dispatcher) gets the same interceptor, composed once.
  const composed = new WeakMap<undici.Dispatcher, undici.Dispatcher>();
  const withHedging = (d: undici.Dispatcher) => {
    let c = composed.get(d);
    if (c === undefined) {
      c = d.compose(interceptor);
      composed.set(d, c);
    }
    return c;
  };
  /** Calls not yet answered: close() waits for them. */
  let inFlight = 0;
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;
  const answered = () => {
    if (--inFlight === 0) drained?.();
  };

  /** Sends one call through undici.fetch over the hedging dispatcher. */
  function send(call: UndiciCall): Promise<undici.Response> {
    const own = call.init.dispatcher;
    call.init.dispatcher = own === undefined ? hedged : withHedging(own);
    const caller = call.init.signal;
    if (caller === undefined || caller === null) {
      return undici.fetch(call.input, call.init).catch(ownError);
    }
    if (caller.aborted) return Promise.reject(caller.reason);
    const link = linkSignal(caller);
    call.init.signal = link.signal;
    return undici.fetch(call.input, call.init).then(
      (res) => link.keep(res),
      (err: unknown) => {
        link.release();
        return ownError(err);
      },
    );
  }

  const hedgedFetch = (input: string | URL | Request, init?: RequestInit) => {
    if (closing !== undefined) {
      return Promise.reject(
        new TailcutError('TAILCUT_CLOSED', 'tailcut: this hedged fetch was closed with close()'),
      );
    }
    let pending: Promise<undici.Response>;
    try {
      const call = toUndiciCall(input, init as undici.RequestInit | undefined);
      pending = call instanceof Promise ? call.then(send) : send(call);
    } catch (err) {
      return Promise.reject(err);
    }
    inFlight++;
    pending.then(answered, answered);
    return pending;
  };

  // undici's Response is the WHATWG Response the global types describe.
  return Object.assign(hedgedFetch as unknown as HedgedFetch, {
    stats: () => hedger.stats(),
    close() {
      closing ??= (async () => {
        warmer?.stop();
        if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
        if (settings.dispatcher === undefined) await base.close();
      })();
      return closing;
    },
  });
}
