import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import { type BudgetOptions, HedgeBudget } from '../budget/budget.js';
import type { DelaySettings } from '../delay/estimator.js';
import { compileMatch, type RouteMatcher } from '../routes/matcher.js';
import { checkBoolean, checkNumber, checkObject, invalid, isObject } from './checks.js';
import type { KeyRequest } from './options.js';
import { validateReplicas } from './replicas.js';

/** Hard cap on attempts per call, whatever the configuration. */
export const MAX_ATTEMPTS_CAP = 5;

/** Statuses that are not acceptable answers unless a route says otherwise. */
export const DEFAULT_RETRY_ON: readonly number[] = [408, 429, 500, 502, 503, 504];

/** Defaults of `route.hedge`. */
export const HEDGE_DEFAULTS = {
  percentile: 95,
  maxAttempts: 2,
  initialDelayMs: 100,
  minDelayMs: 1,
  maxDelayMs: 30_000,
  windowMs: 30_000,
  minSamples: 20,
} as const;

/** A route after validation. */
export interface RouteSettings {
  name: string;
  matches: RouteMatcher;
  /** Normalised origins, or empty for "the request's own origin". */
  replicas: string[];
  /** Per replica (same index): headers only its attempts carry, if any. */
  replicaHeaders: (Record<string, string> | undefined)[];
  /** Every header name some replica sets: removed from the caller's headers for all attempts. */
  replicaHeaderNames: string[];
  idempotent: boolean;
  /** 1 when the route's hedging is off. */
  maxAttempts: number;
  delay: DelaySettings;
  commitOn: 'headers' | 'first-byte';
  retryOn: ReadonlySet<number>;
  /** Calls slower than this (end to end, ms) count as slow. */
  sloMs: number | undefined;
  /** Longest pause between body chunks, ms. */
  chunkTimeoutMs: number | undefined;
  key: ((request: KeyRequest) => string | undefined) | undefined;
  maxKeys: number;
}

/** Client options after validation. */
export interface ClientSettings {
  routes: RouteSettings[];
  budget: HedgeBudget;
  maxBufferedBodyBytes: number;
  maxTotalBufferedBytes: number;
  meterProvider: MeterProvider | undefined;
  tracerProvider: TracerProvider | undefined;
}

const ROUTE_KEYS = [
  'name',
  'match',
  'replicas',
  'idempotent',
  'hedge',
  'commitOn',
  'retryOn',
  'sloMs',
  'chunkTimeoutMs',
  'key',
  'maxKeys',
];
const HEDGE_KEYS = Object.keys(HEDGE_DEFAULTS);
const CLIENT_KEYS = [
  'routes',
  'budget',
  'dispatcher',
  'maxBufferedBodyBytes',
  'maxTotalBufferedBytes',
  'meterProvider',
  'tracerProvider',
];

function validateDelay(
  option: string,
  input: unknown,
): { maxAttempts: number; delay: DelaySettings } {
  const h = input === undefined ? {} : checkObject(option, input, HEDGE_KEYS);
  const d = HEDGE_DEFAULTS;
  const ms = { min: 0, max: 3_600_000 };
  const delay: DelaySettings = {
    percentile: checkNumber(`${option}.percentile`, h.percentile, d.percentile, {
      min: 0,
      max: 100,
      minExclusive: true,
      maxExclusive: true,
    }),
    initialDelayMs: checkNumber(`${option}.initialDelayMs`, h.initialDelayMs, d.initialDelayMs, ms),
    minDelayMs: checkNumber(`${option}.minDelayMs`, h.minDelayMs, d.minDelayMs, ms),
    maxDelayMs: checkNumber(`${option}.maxDelayMs`, h.maxDelayMs, d.maxDelayMs, ms),
    windowMs: checkNumber(`${option}.windowMs`, h.windowMs, d.windowMs, {
      min: 1_000,
      max: 3_600_000,
      integer: true,
    }),
    minSamples: checkNumber(`${option}.minSamples`, h.minSamples, d.minSamples, {
      min: 1,
      max: 1_000_000,
      integer: true,
    }),
  };
  if (delay.minDelayMs > delay.maxDelayMs) {
    invalid(
      `${option}.minDelayMs`,
      delay.minDelayMs,
      `<= ${option}.maxDelayMs (${delay.maxDelayMs})`,
    );
  }
  const maxAttempts = checkNumber(`${option}.maxAttempts`, h.maxAttempts, d.maxAttempts, {
    min: 1,
    max: MAX_ATTEMPTS_CAP,
    integer: true,
  });
  return { maxAttempts, delay };
}

function validateRetryOn(option: string, value: unknown): ReadonlySet<number> {
  if (value === undefined) return new Set(DEFAULT_RETRY_ON);
  if (!Array.isArray(value)) invalid(option, value, 'an array of HTTP status codes (100..599)');
  return new Set(
    value.map((status: unknown, i: number) =>
      checkNumber(`${option}[${i}]`, status, 0, { min: 100, max: 599, integer: true }),
    ),
  );
}

function validateRoute(option: string, input: unknown): RouteSettings {
  const r = checkObject(option, input, ROUTE_KEYS);
  if (typeof r.name !== 'string' || r.name.trim() === '') {
    invalid(`${option}.name`, r.name, 'a non-empty string');
  }
  const commitOn = r.commitOn ?? 'headers';
  if (commitOn !== 'headers' && commitOn !== 'first-byte') {
    invalid(`${option}.commitOn`, r.commitOn, '"headers" or "first-byte"');
  }
  if (r.hedge !== undefined && r.hedge !== false && !isObject(r.hedge)) {
    invalid(`${option}.hedge`, r.hedge, 'an object or false');
  }
  const { maxAttempts, delay } = validateDelay(
    `${option}.hedge`,
    r.hedge === false ? undefined : r.hedge,
  );
  const replicas =
    r.replicas === undefined ? [] : validateReplicas(`${option}.replicas`, r.replicas);
  return {
    name: r.name,
    matches: compileMatch(`${option}.match`, r.match),
    replicas: replicas.map((x) => x.origin),
    replicaHeaders: replicas.map((x) => x.headers),
    replicaHeaderNames: [...new Set(replicas.flatMap((x) => Object.keys(x.headers ?? {})))],
    idempotent: checkBoolean(`${option}.idempotent`, r.idempotent, false),
    maxAttempts: r.hedge === false ? 1 : maxAttempts,
    delay,
    commitOn,
    retryOn: validateRetryOn(`${option}.retryOn`, r.retryOn),
    key: validateKey(`${option}.key`, r.key),
    maxKeys: checkNumber(`${option}.maxKeys`, r.maxKeys, 100, {
      min: 1,
      max: 100_000,
      integer: true,
    }),
    chunkTimeoutMs:
      r.chunkTimeoutMs === undefined
        ? undefined
        : checkNumber(`${option}.chunkTimeoutMs`, r.chunkTimeoutMs, 0, {
            min: 0,
            max: 3_600_000,
            minExclusive: true,
          }),
    sloMs:
      r.sloMs === undefined
        ? undefined
        : checkNumber(`${option}.sloMs`, r.sloMs, 0, {
            min: 0,
            max: 3_600_000,
            minExclusive: true,
          }),
  };
}

function validateKey(option: string, value: unknown): RouteSettings['key'] {
  if (value === undefined) return undefined;
  if (typeof value !== 'function')
    invalid(option, value, 'a function (request) => string | undefined');
  return value as RouteSettings['key'];
}

function checkProvider(option: string, value: unknown, method: string): void {
  if (value !== undefined && (!isObject(value) || typeof value[method] !== 'function')) {
    invalid(option, value, `an object with a ${method}() method`);
  }
}

/** Validates the options of createHedgedFetch; throws a TailcutError naming the first bad one. */
export function validateClientOptions(input: unknown): ClientSettings {
  const o = checkObject('options', input, CLIENT_KEYS);
  if (!Array.isArray(o.routes)) invalid('routes', o.routes, 'an array of routes');
  const routes = o.routes.map((r: unknown, i: number) => validateRoute(`routes[${i}]`, r));
  const names = new Set<string>();
  routes.forEach((r, i) => {
    if (names.has(r.name)) invalid(`routes[${i}].name`, r.name, 'unique among routes');
    names.add(r.name);
  });
  const budget =
    o.budget instanceof HedgeBudget ? o.budget : new HedgeBudget((o.budget ?? {}) as BudgetOptions);
  const dispatcher = o.dispatcher;
  if (
    dispatcher !== undefined &&
    (!isObject(dispatcher) || typeof dispatcher.dispatch !== 'function')
  ) {
    invalid('dispatcher', dispatcher, 'an undici Dispatcher');
  }
  checkProvider('meterProvider', o.meterProvider, 'getMeter');
  checkProvider('tracerProvider', o.tracerProvider, 'getTracer');
  const maxBufferedBodyBytes = checkNumber(
    'maxBufferedBodyBytes',
    o.maxBufferedBodyBytes,
    4 * 1024 * 1024,
    {
      min: 0,
      max: 2 ** 31 - 1,
      integer: true,
    },
  );
  const maxTotalBufferedBytes = checkNumber(
    'maxTotalBufferedBytes',
    o.maxTotalBufferedBytes,
    64 * 1024 * 1024,
    { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true },
  );
  return {
    routes,
    budget,
    maxBufferedBodyBytes,
    maxTotalBufferedBytes,
    meterProvider: o.meterProvider as MeterProvider | undefined,
    tracerProvider: o.tracerProvider as TracerProvider | undefined,
  };
}
