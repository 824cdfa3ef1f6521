import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { HedgeBudget } from '../budget/port.js';
import type { Clock } from '../clock.js';
import type { KeyRequest } from '../request-view.js';
import type { StreamEvent } from '../stream/events.js';

export type { KeyRequest, StreamEvent };

/**
 * A stream format of your own: `firstToken(event)` says whether an event of the answer carries
 * generated output. Failures (an `error` event or a top-level `error` field) are still
 * recognised.
 */
export interface FirstTokenRule {
  firstToken: (event: StreamEvent) => boolean;
}

/** Hedging settings of a route. Every field is optional; defaults are in the README. */
export interface HedgeOptions {
  /**
   * Percentile of recent attempt latencies after which a hedge is sent, in (0, 100). Default 95.
   * `'auto'` starts at 95 and raises the delay while the hedges it saves cost the predicted p99.9
   * little (each halving of hedges at most ~7% of tail): for fleets whose slow calls are a
   * separate mode (a stall, a cold cache), it hedges those and leaves the fast calls' own tail
   * alone. It needs 200 remembered latencies before it moves.
   */
  percentile?: number | 'auto';
  /** Attempts per call, primary included: 1..5. Default 2 (one hedge). */
  maxAttempts?: number;
  /** Delay used until the route has `minSamples` latencies, ms. Default 100. */
  initialDelayMs?: number;
  /** Lower clamp of the learned delay, ms. Default 1. */
  minDelayMs?: number;
  /** Upper clamp of the learned delay, ms. Default 30,000. */
  maxDelayMs?: number;
  /**
   * Oldest latency the delay may rest on, ms (1 s .. 1 h); at most 2,048 are remembered. When
   * the newest disagree with the rest beyond chance (the fleet shifted), the delay rests on the
   * newest alone (about a second at 500 calls/s for a p95). Default 30,000.
   */
  windowMs?: number;
  /** Latencies remembered (within `windowMs`) before the percentile is trusted. Default 20. */
  minSamples?: number;
}

/** Which requests a route applies to. All given fields must match; omitted ones match anything. */
export interface RouteMatch {
  /** HTTP method or methods, case-insensitive. */
  method?: string | readonly string[];
  /** `host` (`name:port`) or hostname of the request URL, case-insensitive. */
  host?: string;
  /** Path: exact (`/v1/chat`), prefix (`/v1/*`) or a RegExp tested against the pathname. */
  path?: string | RegExp;
}

/** A JSON value, as a replica's `json` rewrite sets it. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * A replica with a request shape of its own: a provider or deployment that wants its own path,
 * query, credentials or model name (OpenAI, Azure OpenAI, a self-hosted vLLM behind one route).
 */
export interface ReplicaOptions {
  /** Where its attempts go: an http(s) origin, no path. */
  origin: string | URL;
  /** Label in `stats()` and the `tailcut.replica` telemetry attribute. Default: the origin. */
  name?: string;
  /**
   * The path its attempts use instead of the request's: a string (`/openai/deployments/d/chat/
   * completions`), or a function of the request's path (without the query). The request's
   * query is kept.
   */
  path?: string | ((path: string) => string);
  /** Query parameters set on its attempts (merged into the request's); `null` removes one. */
  query?: Record<string, string | null>;
  /**
   * Headers only its attempts carry; `null` removes the caller's header of that name. A replica
   * with headers of its own never gets the caller's credentials (`authorization`, `api-key`,
   * `x-api-key`, `cookie`, ... and every name some replica of the route sets).
   */
  headers?: Record<string, string | null>;
  /** Top-level fields set in the request's JSON object body (for example `model`). */
  json?: Record<string, JsonValue>;
  /** Never the primary: used only for hedges (a pricier provider, a backup region). Default false. */
  hedgeOnly?: boolean;
  /** Share of primaries in the weighted rotation (relative to the others). Default 1. */
  weight?: number;
}

/** One route: which requests, where they may go, and how they are hedged. */
export interface RouteOptions {
  /** Name used in stats, metrics and traces. Unique within a client. */
  name: string;
  /** Which requests this route applies to; omitted: every request. First matching route wins. */
  match?: RouteMatch;
  /**
   * Origins (http/https, no path, no credentials) the route's attempts go to, or replicas with a
   * request shape of their own ({@link ReplicaOptions}). The request URL's origin is rewritten per
   * attempt; path and query stay unless the replica rewrites them. Default: the request's own
   * origin.
   */
  replicas?: readonly (string | URL | ReplicaOptions)[];
  /** Allows hedging methods other than GET/HEAD/OPTIONS; attempts share one Idempotency-Key. */
  idempotent?: boolean;
  /** Hedge settings, or `false` to send each call once (still routed and counted). */
  hedge?: HedgeOptions | false;
  /**
   * When an attempt wins: on its response headers (default), on the first body byte, or on the
   * first generated output of a streamed answer (`'first-token'`: SSE and NDJSON of OpenAI,
   * Anthropic, Ollama and compatible APIs; `{ firstToken }` for a format of your own).
   */
  commitOn?: 'headers' | 'first-byte' | 'first-token' | FirstTokenRule;
  /** Response statuses that are not acceptable answers. Default 408, 429, 500, 502, 503, 504. */
  retryOn?: readonly number[];
  /** The route's latency objective, ms: calls slower end to end count as slow (metrics, stats). */
  sloMs?: number;
  /**
   * A conditioning key per request (for example the model name from the JSON body): each key
   * learns its own delay. Return undefined for the route's own. Errors count as undefined.
   */
  key?: (request: KeyRequest) => string | undefined;
  /** Most keys with an estimator of their own (least recently used dropped). Default 100. */
  maxKeys?: number;
  /**
   * Longest pause allowed between body chunks of the answer (from its headers), ms: past it the
   * call is aborted with `TAILCUT_CHUNK_TIMEOUT` (a stalled token stream). Default: none.
   */
  chunkTimeoutMs?: number;
}

/** Options of a hedge budget (the `budget` option, or `createBudget(options)`). */
export interface BudgetOptions {
  /** Hedges allowed per call made, 0..1. Default 0.05 (5% extra load). */
  ratio?: number;
  /** Hedges always allowed per second, whatever the call rate (a floor for quiet clients). Default 10. */
  minPerSecond?: number;
  /** How long a deposit lives, in ms, so that a quiet period cannot bank a burst. Default 10,000. */
  ttlMs?: number;
  /** Hedges allowed in flight at once; a hedge over the cap is skipped, never queued. Default 100. */
  maxConcurrentHedges?: number;
  /**
   * Weighs each call (for example an estimate of its prompt tokens) so that the extra load is
   * bounded in the unit the provider bills: a call deposits `ratio × cost`, its hedge withdraws
   * `cost`, and `minPerSecond` is in that unit too. Default: every call costs 1. A function that
   * throws or returns a negative or non-finite number counts as 1.
   */
  cost?: (request: KeyRequest) => number;
  /** Time source (tests and simulations). Default: the client's clock, or the real clock. */
  clock?: Clock;
}

/** Options of {@link createHedgedFetch}. */
/**
 * An undici dispatcher (`Agent`, `Pool`, `Client`, a composed one), from undici 7 or 8: what
 * tailcut needs of it. Typed by shape, because undici 7's and 8's `Dispatcher` types differ in
 * details tailcut does not use.
 */
export interface AnyDispatcher {
  dispatch(options: never, handler: never): boolean;
  compose(...interceptors: never[]): unknown;
  close(): Promise<void>;
}

export interface HedgedFetchOptions {
  /** Routes, tried in order; a request that matches none passes through unhedged. */
  routes: readonly RouteOptions[];
  /** The hedge budget for all routes: options, or a budget shared with other clients. */
  budget?: BudgetOptions | HedgeBudget;
  /**
   * Dispatcher for every attempt, from undici 7 or 8. Default: a new undici Agent, closed by
   * `close()`.
   */
  dispatcher?: AnyDispatcher;
  /** Largest streamed request body buffered for replay, bytes. Default 4 MiB. */
  maxBufferedBodyBytes?: number;
  /** Largest total of bodies buffered at once by this client, bytes. Default 64 MiB. */
  maxTotalBufferedBytes?: number;
  /**
   * Keeps a connection to every replica open (an `OPTIONS /` to each origin when the client is
   * composed onto its dispatcher, then every `intervalMs`, default 2,000), so that a hedge does
   * not pay TCP and TLS setup. Default false.
   */
  warmConnections?: boolean | { intervalMs?: number };
  /** OpenTelemetry MeterProvider for tailcut's metrics. Default: the global one. */
  meterProvider?: MeterProvider;
  /** OpenTelemetry TracerProvider for tailcut's spans. Default: the global one. */
  tracerProvider?: TracerProvider;
  /**
   * The client's time source: hedge delays, windows, the budget it creates and telemetry all
   * read it. Default: the real clock. A `VirtualClock` (from `tailcut/engine`) makes tests and
   * simulations deterministic.
   */
  clock?: Clock;
}
