import type { KeyRequest } from '../request-view.js';
import { compileMatch } from '../routes/matcher.js';
import { classifyEvent, type EventKind, type StreamEvent } from '../stream/events.js';
import { checkNumber, invalid, isObject } from './checks.js';
import type { HedgeOptions, RouteOptions } from './options.js';
import { validateReplicas } from './replicas.js';
import { booleanOption, functionOption, numberOption, optionalNumberOption } from './specs.js';
import { type OptionTable, readOptions, type SettingsOf } from './table.js';

/** Hard cap on attempts per call, whatever the configuration. */
export const MAX_ATTEMPTS_CAP = 5;

/** Statuses that are not acceptable answers unless a route says otherwise. */
export const DEFAULT_RETRY_ON: readonly number[] = [408, 429, 500, 502, 503, 504];

const MS = { min: 0, max: 3_600_000 };
const PERCENT = { min: 0, max: 100, minExclusive: true, maxExclusive: true };

/** The options of `route.hedge`. */
export const HEDGE_OPTIONS = {
  percentile: {
    default: '95',
    valid: "number in (0, 100), or `'auto'`",
    doc: "percentile of recent latencies after which a hedge is sent; `'auto'` starts at 95 and rises while the predicted p99.9 pays little for the hedges saved (for fleets whose slow calls are a separate mode)",
    check(option, value): number | 'auto' {
      if (value === 'auto') return 'auto';
      if (value !== undefined && typeof value !== 'number') {
        invalid(option, value, "a finite number > 0 and < 100, or 'auto'");
      }
      return checkNumber(option, value, 95, PERCENT);
    },
  },
  maxAttempts: numberOption(
    2,
    { min: 1, max: MAX_ATTEMPTS_CAP, integer: true },
    { valid: `integer 1 … ${MAX_ATTEMPTS_CAP}`, doc: 'attempts per call, primary included' },
  ),
  initialDelayMs: numberOption(100, MS, {
    valid: '0 … 3,600,000',
    doc: 'the delay until `minSamples` latencies are remembered',
  }),
  minDelayMs: numberOption(1, MS, {
    valid: '0 … 3,600,000, ≤ `maxDelayMs`',
    doc: 'lower clamp of the learned delay',
  }),
  maxDelayMs: numberOption(30_000, MS, {
    valid: '0 … 3,600,000',
    doc: 'upper clamp of the learned delay',
  }),
  windowMs: numberOption(
    30_000,
    { min: 1_000, max: 3_600_000, integer: true },
    {
      valid: 'integer 1,000 … 3,600,000',
      doc: 'the oldest latency the delay may rest on (at most 2,048 are remembered); when the newest disagree with the rest beyond chance, the fleet shifted and the delay rests on the newest alone (about a second at 500 calls/s for a p95)',
    },
  ),
  minSamples: numberOption(
    20,
    { min: 1, max: 1_000_000, integer: true },
    {
      valid: 'integer 1 … 1,000,000',
      doc: 'latencies remembered (within `windowMs`) before the percentile is trusted',
    },
  ),
} satisfies OptionTable<HedgeOptions>;

/** `route.hedge` after validation. */
export type HedgeSettings = SettingsOf<typeof HEDGE_OPTIONS>;

function checkHedge(option: string, value: unknown): HedgeSettings | false {
  if (value === false) return false;
  if (value !== undefined && !isObject(value)) invalid(option, value, 'an object or false');
  const hedge = readOptions(option, value ?? {}, HEDGE_OPTIONS);
  if (hedge.minDelayMs > hedge.maxDelayMs) {
    invalid(
      `${option}.minDelayMs`,
      hedge.minDelayMs,
      `<= ${option}.maxDelayMs (${hedge.maxDelayMs})`,
    );
  }
  return hedge;
}

function checkName(option: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') {
    invalid(option, value, 'a non-empty string');
  }
  return value;
}

/** A route's commit point, and how output events are recognised on first-token routes. */
export interface CommitRule {
  on: 'headers' | 'first-byte' | 'first-token';
  classify: ((event: StreamEvent) => EventKind) | undefined;
}

function checkCommitOn(option: string, value: unknown): CommitRule {
  if (value === undefined || value === 'headers' || value === 'first-byte') {
    return { on: value ?? 'headers', classify: undefined };
  }
  if (value === 'first-token') return { on: 'first-token', classify: classifyEvent };
  if (
    isObject(value) &&
    Object.keys(value).length === 1 &&
    typeof value.firstToken === 'function'
  ) {
    const isToken = value.firstToken as (event: StreamEvent) => boolean;
    return {
      on: 'first-token',
      classify: (event) =>
        isToken(event) === true ? 'token' : classifyEvent(event) === 'error' ? 'error' : 'other',
    };
  }
  invalid(
    option,
    value,
    '"headers", "first-byte", "first-token" or { firstToken: (event) => boolean }',
  );
}

function checkRetryOn(option: string, value: unknown): ReadonlySet<number> {
  if (value === undefined) return new Set(DEFAULT_RETRY_ON);
  if (!Array.isArray(value)) invalid(option, value, 'an array of HTTP status codes (100..599)');
  return new Set(
    value.map((status: unknown, i: number) =>
      checkNumber(`${option}[${i}]`, status, 0, { min: 100, max: 599, integer: true }),
    ),
  );
}

const POSITIVE_MS = { min: 0, max: 3_600_000, minExclusive: true };

/** The options of a route. */
export const ROUTE_OPTIONS = {
  name: {
    default: '(required)',
    valid: 'non-empty string, unique',
    doc: 'label in `stats()`, metrics and traces',
    check: checkName,
  },
  match: {
    default: 'every request',
    valid: 'object: `method`, `host`, `path` (below)',
    doc: 'which requests the route applies to; the first matching route wins',
    check: compileMatch,
  },
  replicas: {
    default: "the request's own origin",
    valid:
      'non-empty array of unique http(s) origins (string, URL, or `{ origin, headers }`): no userinfo, path, query, fragment, link-local or cloud-metadata address',
    doc: "where attempts go; the request URL's origin is rewritten per attempt, path and query stay. Without `match.host`, the route applies only to requests sent to one of its replicas (never to a third-party origin or a redirect's target); with `match.host`, to requests for that host, whichever replica they name",
    check: (option: string, value: unknown) =>
      value === undefined ? [] : validateReplicas(option, value),
  },
  idempotent: booleanOption(
    false,
    'allows hedging methods other than GET/HEAD/OPTIONS; every attempt then carries one `Idempotency-Key`',
  ),
  hedge: {
    default: '`{}`',
    valid: 'object (below), or `false` to never hedge the route',
    doc: 'when and how often to hedge',
    check: checkHedge,
  },
  commitOn: {
    default: "`'headers'`",
    valid: "`'headers'` | `'first-byte'` | `'first-token'` | `{ firstToken: (event) => boolean }`",
    doc: 'when an attempt wins: on its response headers, on the first body byte of an acceptable answer, or on the first generated output of a streamed answer (SSE or NDJSON: OpenAI Chat Completions and Responses, Anthropic Messages, Ollama; comments, pings, role-only deltas and start events do not count; an error event or a stream with no output fails the attempt; at most 64 KiB is held before the commit). `firstToken` recognises a format of your own',
    check: checkCommitOn,
  },
  retryOn: {
    default: `\`[${DEFAULT_RETRY_ON.join(', ')}]\``,
    valid: 'array of integers 100 … 599',
    doc: 'statuses that are not acceptable answers: the next attempt goes at once',
    check: checkRetryOn,
  },
  sloMs: optionalNumberOption(POSITIVE_MS, {
    valid: 'number > 0, ≤ 3,600,000',
    doc: 'calls slower end to end count as slow (metrics, `stats()`)',
  }),
  chunkTimeoutMs: optionalNumberOption(POSITIVE_MS, {
    valid: 'number > 0, ≤ 3,600,000',
    doc: 'longest pause between body chunks of the answer (from its headers); past it the call fails with `TAILCUT_CHUNK_TIMEOUT` (pauses of the caller itself do not count)',
  }),
  key: functionOption<(request: KeyRequest) => string | undefined>(
    '(request) => string | undefined',
    {
      default: 'none',
      doc: 'a conditioning key (e.g. the model from the JSON body, via `request.text()`, which does not consume the body): each key learns its own delay; a throwing function counts as no key',
    },
  ),
  maxKeys: numberOption(
    100,
    { min: 1, max: 100_000, integer: true },
    {
      valid: 'integer 1 … 100,000',
      doc: 'keys with an estimator of their own (about 7 KiB each); the least recently used is dropped',
    },
  ),
} satisfies OptionTable<RouteOptions>;

/** A route's options as validated, before the engine derives its settings. */
export type RouteInput = SettingsOf<typeof ROUTE_OPTIONS>;
