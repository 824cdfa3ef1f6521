import { randomUUID } from 'node:crypto';
import * as undici from 'undici';
import { realClock } from '../clock.js';
import type { HedgedFetchOptions } from '../config/options.js';
import { validateClientOptions } from '../config/validate.js';
import type { HedgeStats } from '../engine/hedger.js';
import { Hedger } from '../engine/hedger.js';
import { race } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { TailcutError } from '../errors.js';
import { isStreamBody } from './body.js';
import { ByteQuota } from './byte-quota.js';
import { planCall, verdict } from './plan.js';
import { type CallParts, readCall } from './request.js';
import { handOver } from './response.js';

/** A fetch function with hedging, plus its stats and a way to release its resources. */
export interface HedgedFetch {
  /** Same signature and behaviour as WHATWG fetch; matched routes are hedged. */
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Per-route delay, window size and counters, and the budget's balance. */
  stats(): HedgeStats;
  /** Rejects further calls and closes the dispatcher this client created (not one passed in). */
  close(): Promise<void>;
}

interface AttemptResult {
  res: undici.Response;
  /** First body chunk, read when the route commits on the first byte. */
  head?: Uint8Array | undefined;
  reader?: ReadableStreamDefaultReader<Uint8Array> | undefined;
}

function discard(result: AttemptResult): void {
  const done = result.reader ? result.reader.cancel() : result.res.body?.cancel();
  done?.catch(() => {});
}

/**
 * Creates a fetch function that hedges the requests matching its routes: when an attempt runs
 * past the route's recent percentile latency, a backup goes to another replica, the first
 * acceptable answer wins and the others are aborted, under a budget shared by all routes.
 * Requests that match no route pass through to undici's fetch unchanged.
 *
 * Throws a {@link TailcutError} with code `TAILCUT_INVALID_OPTION` naming the option and value
 * when the configuration is invalid.
 */
export function createHedgedFetch(options: HedgedFetchOptions): HedgedFetch {
  const settings = validateClientOptions(options);
  const hedger = new Hedger(settings, realClock);
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new undici.Agent();
  const quota = new ByteQuota(settings.maxTotalBufferedBytes);
  const limits = { perCall: settings.maxBufferedBodyBytes, quota };
  let closed = false;

  const send = (
    call: CallParts,
    target: string,
    body: unknown,
    streaming: boolean,
    signal: AbortSignal | undefined,
  ) =>
    undici.fetch(target, {
      ...call.rest,
      method: call.method,
      headers: call.headers,
      body: body as undici.BodyInit,
      signal,
      dispatcher: (call.rest.dispatcher as undici.Dispatcher | undefined) ?? dispatcher,
      ...(streaming ? { duplex: 'half' } : {}),
    } as undici.RequestInit);

  async function hedged(call: CallParts, route: RouteState): Promise<undici.Response> {
    const plan = await planCall(route, call.methodKey, call.body, limits);
    const { body } = plan;
    try {
      if (plan.needsIdempotencyKey && !call.headers.has('idempotency-key')) {
        call.headers.set('idempotency-key', randomUUID());
      }
      if (body.contentType !== undefined && !call.headers.has('content-type')) {
        call.headers.set('content-type', body.contentType);
      }
      const path = call.url.pathname + call.url.search;
      const firstByte = route.settings.commitOn === 'first-byte';
      const win = await race<AttemptResult>({
        route,
        budget: hedger.budget,
        clock: hedger.clock,
        signal: call.signal,
        maxAttempts: plan.maxAttempts,
        async run(ctx) {
          const target = ctx.origin === undefined ? call.url.href : ctx.origin + path;
          const res = await send(call, target, body.next(), body.streaming, ctx.signal);
          if (!firstByte || res.body === null || verdict(route, res.status, ctx) !== 'accept') {
            return { res };
          }
          const reader = res.body.getReader();
          const first = await reader.read();
          return { res, head: first.value, reader };
        },
        judge: (result, ctx) => verdict(route, result.res.status, ctx),
        discard,
      });
      return handOver(win.value.res, {
        head: win.value.head,
        reader: win.value.reader,
        signal: call.signal,
        abort: win.abort,
      });
    } finally {
      body.release();
    }
  }

  const hedgedFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<undici.Response> => {
    if (closed) {
      throw new TailcutError(
        'TAILCUT_CLOSED',
        'tailcut: this hedged fetch was closed with close()',
      );
    }
    const call = readCall(input, init as Record<string, unknown> | undefined);
    const route = hedger.route(call.methodKey, call.url);
    if (route === undefined) {
      return send(call, call.url.href, call.body, isStreamBody(call.body), call.signal);
    }
    return hedged(call, route);
  };

  // undici's Response is the WHATWG Response the global types describe.
  return Object.assign(hedgedFetch as unknown as HedgedFetch, {
    stats: () => hedger.stats(),
    async close() {
      closed = true;
      if (ownDispatcher) await dispatcher.close();
    },
  });
}
