import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { HedgeBudget } from '../budget/port.js';
import type { Clock } from '../clock.js';
import type { DelaySettings } from '../delay/estimator.js';
import type { KeyRequest } from '../request-view.js';
import { type RouteMatcher, routeMatcher } from '../routes/matcher.js';
import type { EventKind, StreamEvent } from '../stream/events.js';
import type { BudgetSettings } from './budget-table.js';
import { CLIENT_OPTIONS } from './client-table.js';
import type { AnyDispatcher } from './options.js';
import type { ReplicaSettings } from './replicas.js';
import { HEDGE_OPTIONS, type RouteInput } from './route-table.js';
import { readOptions } from './table.js';

/** A route after validation. */
export interface RouteSettings {
  name: string;
  matches: RouteMatcher;
  /** The replicas, or empty for "the request's own origin". */
  replicas: readonly ReplicaSettings[];
  /** The replicas' distinct origins. */
  origins: readonly string[];
  /**
   * When some replica has headers of its own: the caller's headers that count as credentials
   * (the usual names, and every name some replica sets or removes). Else empty: the caller's
   * headers go to every replica.
   */
  credentialNames: readonly string[];
  /** True when some replica rewrites the path, query or JSON body. */
  reshapes: boolean;
  /** True when some replica sets fields of the JSON body. */
  rewritesJson: boolean;
  idempotent: boolean;
  /** 1 when the route's hedging is off. */
  maxAttempts: number;
  delay: DelaySettings;
  commitOn: 'headers' | 'first-byte' | 'first-token';
  /** On first-token routes: what an event of a streamed answer means. */
  classify: ((event: StreamEvent) => EventKind) | undefined;
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
  /** A budget shared with other clients, or the settings of the client's own. */
  budget: HedgeBudget | BudgetSettings;
  dispatcher: AnyDispatcher | undefined;
  maxBufferedBodyBytes: number;
  maxTotalBufferedBytes: number;
  /** Ping interval of warm connections, ms; undefined when off. */
  warmConnections: number | undefined;
  meterProvider: MeterProvider | undefined;
  tracerProvider: TracerProvider | undefined;
  clock: Clock | undefined;
}

/** Request headers that carry credentials, whichever replica sets them. */
const CREDENTIAL_HEADERS = [
  'authorization',
  'proxy-authorization',
  'api-key',
  'x-api-key',
  'cookie',
];

/**
 * The caller's headers a replica with headers of its own never gets: the usual credential
 * names, and every name some replica sets or removes. Empty when no replica has headers.
 */
function credentialNames(replicas: readonly ReplicaSettings[]): string[] {
  const own = replicas.flatMap((x) => Object.keys(x.headers ?? {}));
  return replicas.some((x) => x.headers !== undefined)
    ? [...new Set([...CREDENTIAL_HEADERS, ...own])]
    : [];
}

/** The engine's view of a validated route. */
function routeSettings(r: RouteInput): RouteSettings {
  const { maxAttempts, ...delay } =
    r.hedge === false ? readOptions('hedge', {}, HEDGE_OPTIONS) : r.hedge;
  return {
    name: r.name,
    matches: routeMatcher(
      r.match,
      r.replicas.map((x) => x.origin),
    ),
    replicas: r.replicas,
    origins: [...new Set(r.replicas.map((x) => x.origin))],
    credentialNames: credentialNames(r.replicas),
    reshapes: r.replicas.some(
      (x) => x.path !== undefined || x.query !== undefined || x.json !== undefined,
    ),
    rewritesJson: r.replicas.some((x) => x.json !== undefined),
    idempotent: r.idempotent,
    maxAttempts: r.hedge === false ? 1 : maxAttempts,
    delay,
    commitOn: r.commitOn.on,
    classify: r.commitOn.classify,
    retryOn: r.retryOn,
    sloMs: r.sloMs,
    chunkTimeoutMs: r.chunkTimeoutMs,
    key: r.key,
    maxKeys: r.maxKeys,
  };
}

/**
 * Validates the options of createHedgedFetch and hedge() against their tables; throws a
 * TailcutError (`TAILCUT_INVALID_OPTION`) naming the first bad option and its value.
 */
export function validateClientOptions(input: unknown): ClientSettings {
  const o = readOptions('', input, CLIENT_OPTIONS);
  return { ...o, routes: o.routes.map(routeSettings) };
}
