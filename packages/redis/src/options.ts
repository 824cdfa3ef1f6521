import type { MeterProvider } from '@opentelemetry/api';
import type { KeyRequest } from 'tailcut';
import { TailcutError } from 'tailcut';

/** A Redis client the budget can use: node-redis (`redis` 4–6) or ioredis. */
export type RedisClientLike =
  | { sendCommand(args: readonly string[]): Promise<unknown> }
  | { call(command: string, ...args: string[]): Promise<unknown> };

/** Options of {@link createFleetBudget}. */
export interface FleetBudgetOptions {
  /** Redis URL, `redis[s]://[user:password@]host[:port][/db]`; the budget opens its own node-redis connection. Give this or `client`. */
  url?: string;
  /** A connected node-redis or ioredis client to use instead of `url`; the budget does not close it. */
  client?: RedisClientLike;
  /** The fleet's name: instances with the same name (and `prefix`) share one budget. Letters, digits, `._-`, 1–100 characters. */
  name: string;
  /** Hedges allowed per call across the fleet (0 … 1). Default 0.05. */
  ratio?: number;
  /** Hedges always allowed per second to the whole fleet, whatever its call rate: one floor, shared. Default 10. */
  minPerSecond?: number;
  /** How long calls and hedges count (integer 1,000 … 600,000 ms). Default 10,000. */
  ttlMs?: number;
  /** Hedges in flight at once in this instance; a hedge over the cap is skipped. Default 100. */
  maxConcurrentHedges?: number;
  /** Weighs calls (e.g. prompt tokens), as tailcut's `budget.cost`. Default: every call costs 1. */
  cost?: (request: KeyRequest) => number;
  /** How often each instance syncs with Redis, one round trip (integer 50 … 5,000 ms, at most `ttlMs` / 4). Default 200. */
  syncMs?: number;
  /** A sync without an answer after this long puts the instance in local mode; start-up and `close()` take at most this long (integer 10 … 60,000 ms). Default 1,000. */
  timeoutMs?: number;
  /** Prefix of every key. Default `tailcut`. */
  prefix?: string;
  /** Publish this instance's latency histograms and seed new routes' delays from the fleet's. Default true. */
  warmStart?: boolean;
  /** How often latency histograms are published (integer 1,000 … 600,000 ms). Default 10,000. */
  publishMs?: number;
  /** Called when the instance switches between `shared` and `local` mode. Default: one process warning per switch to local. */
  onModeChange?: (mode: FleetMode, reason: string) => void;
  /** OpenTelemetry meter provider for the fleet gauges. Default: the global API. */
  meterProvider?: MeterProvider;
}

/** `shared`: deciding against a lease from Redis; `local`: Redis unreachable (or this instance's settings differ from the fleet's), a local budget with this instance's share of the floor. */
export type FleetMode = 'shared' | 'local';

/** Options after validation, with defaults. */
export interface FleetSettings {
  url: string | undefined;
  client: RedisClientLike | undefined;
  name: string;
  ratio: number;
  minPerSecond: number;
  ttlMs: number;
  maxConcurrentHedges: number;
  cost: ((request: KeyRequest) => number) | undefined;
  syncMs: number;
  timeoutMs: number;
  prefix: string;
  warmStart: boolean;
  publishMs: number;
  onModeChange: ((mode: FleetMode, reason: string) => void) | undefined;
  meterProvider: MeterProvider | undefined;
}

const KNOWN = new Set<string>([
  'url',
  'client',
  'name',
  'ratio',
  'minPerSecond',
  'ttlMs',
  'maxConcurrentHedges',
  'cost',
  'syncMs',
  'timeoutMs',
  'prefix',
  'warmStart',
  'publishMs',
  'onModeChange',
  'meterProvider',
]);

const NAME = /^[A-Za-z0-9._-]{1,100}$/;

function invalid(option: string, value: unknown, rule: string): TailcutError {
  return new TailcutError(
    'TAILCUT_INVALID_OPTION',
    `createFleetBudget: option \`${option}\` must be ${rule}, got ${show(value)}`,
  );
}

/**
 * A string for an error message, without credentials: in anything shaped like a URL, all from
 * the scheme to the last `@` (a password may hold `/`, `@` or `:`, as in `redis://u:a/b@c@host`).
 */
function redact(value: string): string {
  return value.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/*).*@/s, '$1***@');
}

/** A value for an error message: URLs lose their credentials. */
function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(redact(value));
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

function number(
  o: Record<string, unknown>,
  key: string,
  fallback: number,
  min: number,
  max: number,
  integer: boolean,
): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw invalid(key, v, `${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  }
  if (integer && !Number.isInteger(v)) throw invalid(key, v, `an integer from ${min} to ${max}`);
  return v;
}

/** A URL node-redis takes: `redis[s]://[userinfo@]host[:port][/db]`, nothing else. */
function isRedisUrl(url: unknown): boolean {
  if (typeof url !== 'string' || !/^rediss?:\/\//i.test(url)) return false;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (
    parsed.hostname !== '' &&
    /^(\/(\d{1,9})?)?$/.test(parsed.pathname) &&
    parsed.search === '' &&
    parsed.hash === ''
  );
}

function optionalFunction<F>(o: Record<string, unknown>, key: string): F | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'function') throw invalid(key, v, 'a function');
  return v as F;
}

/**
 * Validates the options of {@link createFleetBudget}; throws a `TailcutError`
 * (`TAILCUT_INVALID_OPTION`) that names the option and the value.
 */
export function validateFleetOptions(input: unknown): FleetSettings {
  if (typeof input !== 'object' || input === null) throw invalid('options', input, 'an object');
  const o = input as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KNOWN.has(key))
      throw invalid(key, o[key], `one of the known options (${[...KNOWN].join(', ')})`);
  }
  const { url, client } = o;
  if ((url === undefined) === (client === undefined)) {
    throw invalid('url', url, 'given, or else `client`, but not both');
  }
  if (url !== undefined && !isRedisUrl(url)) {
    throw invalid(
      'url',
      url,
      'a redis:// or rediss:// URL with a host, an optional port and an optional database number (`redis://user:password@host:6379/0`)',
    );
  }
  if (
    client !== undefined &&
    (typeof client !== 'object' ||
      client === null ||
      (typeof (client as { sendCommand?: unknown }).sendCommand !== 'function' &&
        typeof (client as { call?: unknown }).call !== 'function'))
  ) {
    throw invalid(
      'client',
      client,
      'a node-redis client (sendCommand) or an ioredis client (call)',
    );
  }
  if (typeof o.name !== 'string' || !NAME.test(o.name)) {
    throw invalid('name', o.name, '1–100 letters, digits, `.`, `_` or `-`');
  }
  const prefix = o.prefix ?? 'tailcut';
  if (typeof prefix !== 'string' || !NAME.test(prefix)) {
    throw invalid('prefix', prefix, '1–100 letters, digits, `.`, `_` or `-`');
  }
  if (o.warmStart !== undefined && typeof o.warmStart !== 'boolean') {
    throw invalid('warmStart', o.warmStart, 'a boolean');
  }
  const mp = o.meterProvider;
  if (
    mp !== undefined &&
    (typeof mp !== 'object' ||
      mp === null ||
      typeof (mp as { getMeter?: unknown }).getMeter !== 'function')
  ) {
    throw invalid('meterProvider', mp, 'an OpenTelemetry MeterProvider');
  }
  const syncMs = number(o, 'syncMs', 200, 50, 5_000, true);
  const ttlMs = number(o, 'ttlMs', 10_000, 1_000, 600_000, true);
  if (syncMs > ttlMs / 4) {
    // Fewer than four syncs per window: leases would outlive the window they are counted in.
    throw invalid('syncMs', syncMs, `at most \`ttlMs\` / 4 (${ttlMs / 4} with ttlMs ${ttlMs})`);
  }
  return {
    url: url as string | undefined,
    client: client as RedisClientLike | undefined,
    name: o.name,
    ratio: number(o, 'ratio', 0.05, 0, 1, false),
    minPerSecond: number(o, 'minPerSecond', 10, 0, 1_000_000, false),
    ttlMs,
    maxConcurrentHedges: number(o, 'maxConcurrentHedges', 100, 0, 1_000_000, true),
    cost: optionalFunction(o, 'cost'),
    syncMs,
    timeoutMs: number(o, 'timeoutMs', 1_000, 10, 60_000, true),
    prefix,
    warmStart: (o.warmStart as boolean | undefined) ?? true,
    publishMs: number(o, 'publishMs', 10_000, 1_000, 600_000, true),
    onModeChange: optionalFunction(o, 'onModeChange'),
    meterProvider: mp as MeterProvider | undefined,
  };
}
